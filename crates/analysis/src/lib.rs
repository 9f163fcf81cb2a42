//! The thread-state timeline and the schedscope analyses.
//!
//! Data flow: a [`schedscope_trace::Trace`] (time-sorted events) is turned
//! once into a [`Timeline`] (per-thread state intervals and per-CPU run
//! intervals, see DESIGN.md "Thread states"). Each analysis then reads the
//! trace and the timeline through a [`Context`] and returns a serde report
//! struct; [`report::Report`] gathers the sections that were asked for. The
//! same structs feed the text renderers, JSON, Parquet and the TUI, so the
//! numbers always agree.
//!
//! Analyses: [`latency`] (scheduling latency and run time per task),
//! [`gang`] (gang co-run), [`lhp`] (lock-holder preemption), [`idle`] (idle
//! under bandwidth control), [`tlb`] (TLB-shootdown and IPI hotspots).

pub mod error;
pub mod gang;
mod hash;
pub mod idle;
pub mod latency;
pub mod lhp;
pub mod report;
pub mod section;
pub mod symbolize;
pub mod timeline;
pub mod tlb;

pub use error::AnalysisError;
pub use report::{Report, Sections};
pub use timeline::{CpuRun, StateInterval, ThreadState, ThreadTimeline, Timeline};

use schedscope_trace::Trace;

/// User options shared by the analyses.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Explicit gang specs from `--gang-of` (`pid=N`, `tids=A,B,C`,
    /// `comm=REGEX`, `cgroup=PATH`); empty = automatic gangs.
    pub gang_specs: Vec<String>,
    /// Rows per table in text output.
    pub top: usize,
}

/// What every analysis reads.
pub struct Context<'a> {
    /// The decoded trace.
    pub trace: &'a Trace,
    /// Its thread-state timeline.
    pub timeline: &'a Timeline,
    /// User options.
    pub opts: &'a Options,
}
