//! The report: one struct per analysis section, gathered for rendering.
//!
//! JSON shape (a public contract): `{trace: {...}, latency, gang, lhp, idle,
//! tlb, profile}`; only the sections asked for are present. A section that
//! could not be computed serialises as `{"error": {...}}` naming what is missing.

use crate::{gang, idle, latency, lhp, tlb, AnalysisError};
use schedscope_trace::{Trace, Warning};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// Which sections to compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sections {
    /// `--latency`.
    pub latency: bool,
    /// `--gang`.
    pub gang: bool,
    /// `--lhp`.
    pub lhp: bool,
    /// `--idle`.
    pub idle: bool,
    /// `--tlb` (includes the profile when the trace has one).
    pub tlb: bool,
}

impl Sections {
    /// Every section.
    pub fn all() -> Sections {
        Sections {
            latency: true,
            gang: true,
            lhp: true,
            idle: true,
            tlb: true,
        }
    }
}

/// The `trace` object of the JSON report.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSummary {
    /// File as given.
    pub path: String,
    /// Input format (`perf_data`, `ftrace_text`, `trace_cmd_text`, `perf_script_text`).
    pub format: schedscope_trace::TraceFormat,
    /// Number of events decoded.
    pub events: u64,
    /// Events reported lost by the kernel.
    pub lost: u64,
    /// Number of CPUs.
    pub cpus: u32,
    /// First event time (ns).
    pub start_ns: u64,
    /// Last event time (ns).
    pub end_ns: u64,
    /// Count per `system:event`.
    pub events_by_name: BTreeMap<String, u64>,
    /// Decoder warnings.
    pub warnings: Vec<Warning>,
}

impl TraceSummary {
    /// Summarise `trace`.
    pub fn of(trace: &Trace) -> TraceSummary {
        TraceSummary {
            path: trace.path.clone(),
            format: trace.format,
            events: trace.events.len() as u64,
            lost: trace.lost,
            cpus: trace.nr_cpus,
            start_ns: trace.start().0,
            end_ns: trace.end().0,
            events_by_name: trace.events_by_name.clone(),
            warnings: trace.warnings.clone(),
        }
    }
}

/// A section's outcome: its report, or why there is none.
#[derive(Clone, Debug)]
pub struct Section<T>(pub Result<T, AnalysisError>);

impl<T: Serialize> Serialize for Section<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct ErrorObj<'a> {
            error: &'a AnalysisError,
            message: String,
        }
        match &self.0 {
            Ok(v) => v.serialize(s),
            Err(e) => ErrorObj {
                error: e,
                message: e.to_string(),
            }
            .serialize(s),
        }
    }
}

/// Everything `schedscope report` computed.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The input.
    pub trace: TraceSummary,
    /// Scheduling latency and run time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Section<latency::LatencyReport>>,
    /// Gang co-run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<Section<gang::GangReport>>,
    /// Lock-holder preemption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lhp: Option<Section<lhp::LhpReport>>,
    /// Idle under bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<Section<idle::IdleReport>>,
    /// TLB shootdowns and IPIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlb: Option<Section<tlb::TlbReport>>,
    /// cpu-clock profile (present with `--tlb` when the trace has samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<tlb::ProfileReport>,
}
