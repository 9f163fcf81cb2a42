//! Placeholder for the idle analysis (being written).

use crate::{AnalysisError, Context};
use serde::Serialize;

/// The `idle` section.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IdleReport {}

/// Compute the idle section.
pub fn analyze(_ctx: &Context) -> Result<IdleReport, AnalysisError> {
    Err(AnalysisError::missing("idle", &["(not implemented yet)"]))
}
