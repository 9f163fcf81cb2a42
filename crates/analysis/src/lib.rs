//! The thread-state timeline and the schedscope analyses: this crate only
//! computes; presenting is `schedscope-render`'s job (text), serde's (JSON)
//! and the other front ends' (TUI, Parquet export, `diff`).
//!
//! Data flow: a [`schedscope_trace::Trace`] (time-sorted events) is turned
//! once into a [`Timeline`] (per-thread state intervals and per-CPU run
//! intervals, see docs/design.md, "Thread states"). Each analysis reads the trace
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
//! cgroup samples, for the TUI's overlay). Code addresses are named through
//! [`schedscope_trace::symbols`] (tlb, the profile and idle's nohz kicks
//! ask its installed [`schedscope_trace::symbols::Symbolizer`]; the binary
//! installs `schedscope-symbolize`'s, which reads the host), so nothing
//! here reads the host. [`metrics`] turns a report into long-form headline
//! numbers (the export's `summary_metric` table, what `diff` compares),
//! entities named by their cross-run [`keys`]. Shared pieces: [`groups`] (which threads form a gang or VM,
//! for gang and lhp), [`stats`] (percentiles, duration summaries, log2
//! histograms).

pub mod cursor;
pub mod error;
pub mod gang;
pub mod groups;
pub mod idle;
pub mod keys;
pub mod latency;
pub mod lhp;
pub mod metrics;
pub mod report;
pub mod section;
pub mod stats;
pub mod streamed;
#[cfg(test)]
mod test_stream;
pub mod throttle;
pub mod timeline;
pub mod tlb;

pub use error::AnalysisError;
pub use report::{Report, Sections};
pub use timeline::{
    CpuRun, StateInterval, ThreadState, ThreadTimeline, Timeline, TimelineCensus, TimelineStream,
};

use schedscope_trace::Trace;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// User options shared by the analyses.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Called with each step's name and wall time when it ends (timeline,
    /// each section), e.g. to print timings for the benchmarks; `None`:
    /// nothing is measured.
    pub timer: Option<Timer>,
    /// Explicit gang specs from `--gang-of` (`pid=N`, `tids=A,B,C`,
    /// `comm=REGEX`, `cgroup=PATH`); empty = automatic gangs.
    pub gang_specs: Vec<String>,
    /// Rows per table in text output. No analysis reads it (the text views
    /// take `schedscope_render::TextOptions::top`); kept so that front ends
    /// written against it still build.
    pub top: usize,
}

/// A hook told how long each step of [`Report::compute`] took (its name,
/// its wall time), right when it ends: sections run in parallel, so what
/// the hook reads then (e.g. the resident memory) shows who adds how much.
#[derive(Clone)]
pub struct Timer(pub Arc<TimerFn>);

/// What a [`Timer`] calls: the step's name and its wall time.
pub type TimerFn = dyn Fn(&str, Duration) + Send + Sync;

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Timer")
    }
}

impl Options {
    /// Run `f`, then tell [`Options::timer`] (if any) its wall time under `name`.
    pub fn timed<T>(&self, name: &str, f: impl FnOnce() -> T) -> T {
        let Some(timer) = &self.timer else {
            return f();
        };
        let t = Instant::now();
        let r = f();
        (timer.0)(name, t.elapsed());
        r
    }
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
