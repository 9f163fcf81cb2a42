//! Recording with perf_event_open into a perf.data file that Debian's
//! `perf script` and `perf sched` read.
//!
//! Data flow: [`record::record`] resolves the event set against tracefs
//! ([`events`]), opens one perf event per (tracepoint, online CPU) and sends
//! all events of a CPU into one mmap'ed ring (`open`; the syscalls are in
//! `sys`, the only `unsafe` code), then polls the rings and copies their
//! bytes unchanged into
//! [`schedscope_perf_data::PerfDataWriter`] (`drain`),
//! counting samples and losses on the way. At the start it synthesizes FORK/COMM
//! records for every thread alive ([`procfs`]); throughout it samples the
//! CFS bandwidth counters of cgroups and, at start and end, reads every
//! thread's cgroup ([`cgroup`]); at the end it stores the
//! tracefs format files, kallsyms and host metadata in feature sections.

pub mod cgroup;
mod drain;
pub mod error;
pub mod events;
mod open;
pub mod procfs;
pub mod record;
mod sys;

pub use error::RecordError;
pub use open::online_cpus;
pub use record::{
    default_buffer_bytes, parse_buffer_size, record, Progress, RecordConfig, RecordSummary,
    StopReason, DEFAULT_BUFFER_BYTES,
};
