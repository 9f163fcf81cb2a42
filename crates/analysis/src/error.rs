//! Analysis errors.

use serde::Serialize;
use thiserror::Error;

/// Why an analysis produced no numbers.
#[derive(Clone, Debug, Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnalysisError {
    /// The trace lacks events the analysis needs; zeros would be a lie.
    #[error("{analysis}: the trace has no {} events; record them with `{record_command}` (or `{perf_command}`)", missing.join(", "))]
    MissingEvents {
        /// Which analysis.
        analysis: String,
        /// `system:event` names that are missing.
        missing: Vec<String>,
        /// schedscope command that captures them.
        record_command: String,
        /// perf command that captures them.
        perf_command: String,
    },
    /// A user option is invalid (names the option).
    #[error("invalid {option}: {detail}")]
    InvalidOption {
        /// The option as given, e.g. `--gang-of pid=99`.
        option: String,
        /// What is wrong.
        detail: String,
    },
}

impl AnalysisError {
    /// A [`AnalysisError::MissingEvents`] with the record commands built from `missing`.
    pub fn missing(analysis: &str, missing: &[&str]) -> AnalysisError {
        let list = missing.join(",");
        AnalysisError::MissingEvents {
            analysis: analysis.to_string(),
            missing: missing.iter().map(|s| s.to_string()).collect(),
            record_command: format!("schedscope record -e +{} -- COMMAND", missing.join(" -e +")),
            perf_command: format!("perf record -a -e {list} -- COMMAND"),
        }
    }
}
