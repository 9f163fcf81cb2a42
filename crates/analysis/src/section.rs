//! [`Section`]: one analysis's outcome, its report or why there is none.
//!
//! Its own module because both the [`crate::report::Report`] and reports
//! with sub-sections ([`crate::lhp::LhpReport`]) hold them.

use crate::AnalysisError;
use serde::{Serialize, Serializer};

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

impl<T> Section<T> {
    /// Whether the section failed.
    pub fn is_err(&self) -> bool {
        self.0.is_err()
    }
}
