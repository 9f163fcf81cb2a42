//! Placeholder for the tlb analysis (being written).

use crate::{AnalysisError, Context};
use serde::Serialize;

/// The `tlb` section.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TlbReport {}

/// Compute the tlb section.
pub fn analyze(_ctx: &Context) -> Result<TlbReport, AnalysisError> {
    Err(AnalysisError::missing("tlb", &["(not implemented yet)"]))
}

/// The `profile` section (cpu-clock samples).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProfileReport {}
