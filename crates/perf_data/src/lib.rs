//! The perf.data (PERFILE2) format as schedscope writes it, shared by the
//! parser (which reads files) and the collector (which writes them); it
//! does no I/O of its own beyond the `Write + Seek` it is handed.
//!
//! - [`abi`]: kernel and perf-tool ABI values as newtypes with associated
//!   constants ([`abi::RecordType::SAMPLE`]) and constant modules: sample
//!   and read formats, attr types, header feature bits, file header size.
//! - [`attr`]: [`EventAttr`], the `struct perf_event_attr` fields schedscope
//!   sets and their 128-byte ABI layout (what perf_event_open reads and what
//!   the file stores).
//! - [`writer`]: [`PerfDataWriter`] writes header, attrs, records (raw ring
//!   bytes or synthesized COMM/FORK/MMAP/SAMPLE) and feature sections
//!   ([`Features`], [`TracingData`]), then patches the header.
//! - [`sections`]: schedscope's own feature sections (cgroup samples, task
//!   cgroups), one type per record with its encoder and decoder.
//! - [`topology`]: perf's HEADER_CPU_TOPOLOGY section, encoder and decoder.
//! - [`clock`]: perf's HEADER_CLOCK_DATA section (the wall-clock anchor),
//!   encoder and decoder.
//!
//! Data flow: the collector builds an [`AttrSpec`] per event, streams ring
//! bytes through [`PerfDataWriter::write_records`] and ends with
//! [`PerfDataWriter::finish`]; the parser reads the same layout back with
//! the constants of [`abi`] and the decoders of [`sections`].

pub mod abi;
pub mod attr;
pub mod clock;
pub mod sections;
pub mod topology;
pub mod writer;

pub use attr::{attr_flag, EventAttr};
pub use writer::{AttrSpec, Features, FinishSummary, PerfDataWriter, TracingData};
