//! Scheduling latency and run time per task (as `perf sched latency`).

use crate::{AnalysisError, Context};
use serde::Serialize;

/// The `latency` section.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencyReport {}

/// Compute the latency section.
pub fn analyze(_ctx: &Context) -> Result<LatencyReport, AnalysisError> {
    Ok(LatencyReport {})
}
