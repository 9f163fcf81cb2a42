//! The thread-state timeline and the schedscope analyses: this crate only
//! computes; presenting is `schedscope-render`'s job (text), serde's (JSON)
//! and the other front ends' (TUI, Parquet export, `diff`).
//!
//! Data flow: a [`schedscope_trace::Trace`] (time-sorted events) is turned
//! once into a [`Timeline`] (per-thread state intervals and per-CPU run
//! intervals, see DESIGN.md "Thread states"). Each analysis reads the trace
//! and the timeline through a [`Context`] and returns a serde report
//! struct that holds everything a view needs (names, comms, the host);
//! [`report::Report::compute`] runs the sections asked for ([`Sections`],
//! in parallel) and gathers them, each as a [`section::Section`] (its
//! report, or the [`AnalysisError`] saying why there is none). The JSON of
//! these structs is a public contract.
//!
//! Analyses: [`latency`] (scheduling latency and run time per task, perf's
//! rules, its own pass over the events), [`gang`] (gang co-run), [`lhp`]
//! (lock-holder preemption), [`idle`] (idle under bandwidth control, on the
//! timeline's CPU states), [`tlb`] (TLB-shootdown and IPI hotspots, and the
//! cpu-clock profile), [`throttle`] (throttled periods from the recorded
//! cgroup samples, for the TUI's overlay). [`symbolize`] turns kernel and user addresses into names for
//! tlb and idle; it is the only module that reads the host for an answer
//! (/proc/kallsyms, live processes, ELF files; behind its `host` and `elf`
//! modules). Shared pieces: [`groups`] (which threads form a gang or VM,
//! for gang and lhp), [`stats`] (percentiles, duration summaries, log2
//! histograms).

pub mod cursor;
pub mod error;
pub mod gang;
pub mod groups;
pub mod idle;
pub mod latency;
pub mod lhp;
pub mod report;
pub mod section;
pub mod stats;
pub mod symbolize;
pub mod throttle;
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
    /// Rows per table in text output. No analysis reads it (the text views
    /// take `schedscope_render::TextOptions::top`); kept so that front ends
    /// written against it still build.
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
