//! Placeholder for the lhp analysis (being written).

use crate::{AnalysisError, Context};
use serde::Serialize;

/// The `lhp` section.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LhpReport {}

/// Compute the lhp section.
pub fn analyze(_ctx: &Context) -> Result<LhpReport, AnalysisError> {
    Err(AnalysisError::missing("lhp", &["(not implemented yet)"]))
}
