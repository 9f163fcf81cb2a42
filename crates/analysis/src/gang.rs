//! Placeholder for the gang analysis (being written).

use crate::{AnalysisError, Context};
use serde::Serialize;

/// The `gang` section.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GangReport {}

/// Compute the gang section.
pub fn analyze(_ctx: &Context) -> Result<GangReport, AnalysisError> {
    Err(AnalysisError::missing("gang", &["(not implemented yet)"]))
}
