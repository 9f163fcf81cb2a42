//! Recording with perf_event_open into a perf.data file that Debian's
//! `perf script` and `perf sched` read.
//!
//! Data flow: [`record::record`] takes a [`config::RecordConfig`] and runs
//! the phases of a recording. Setup resolves the event set against tracefs
//! ([`events`]); open makes one perf event per (tracepoint, online CPU) and
//! sends all events of a CPU into one mmap'ed ring (`open`; the syscalls,
//! with layouts and ioctl numbers from `perf-event-open-sys`, are in `sys`,
//! the only `unsafe` code), creates the file and enables the events; the
//! snapshot synthesizes FORK/COMM records for every thread alive
//! ([`procfs`]); the drain loop polls the rings and copies their bytes
//! unchanged into [`schedscope_perf_data::PerfDataWriter`] (`drain`),
//! counting samples and losses on the way; finish stops the events and
//! stores the tracefs format files, kallsyms, host metadata, the CPU
//! topology (`topology`, from sysfs, as perf writes it), the wall-clock
//! anchor (HEADER_CLOCK_DATA, the events' CLOCK_MONOTONIC against the time
//! of day at enable time, as `perf record -k mono` writes it) and
//! schedscope's cgroup sections ([`cgroup`]: CFS bandwidth counters sampled
//! throughout, every thread's cgroup at start and end) as feature sections.
//!
//! Module dependencies point one way: `record -> {open, drain, config}`,
//! `drain -> open`, `open -> config`; the file format comes from
//! `schedscope-perf-data`, never from the parser.

pub mod cgroup;
pub mod config;
mod drain;
pub mod error;
pub mod events;
mod open;
pub mod procfs;
pub mod record;
mod sys;
mod topology;

pub use config::{default_buffer_bytes, parse_buffer_size, RecordConfig, DEFAULT_BUFFER_BYTES};
pub use error::RecordError;
pub use open::online_cpus;
pub use record::{record, CpuLoss, Progress, RecordSummary, StopReason};
