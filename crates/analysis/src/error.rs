//! Analysis errors.

use schedscope_trace::Trace;
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
    /// Too many of the trace's sched_switch events could not be decoded
    /// (fields in an unknown form): every thread state would be a guess.
    #[error("{analysis}: {untyped} of {total} sched:sched_switch events could not be decoded (fields in a form schedscope does not know; see the decoder warnings), so thread states cannot be trusted and no numbers are given")]
    UntypedSwitches {
        /// Which analysis.
        analysis: String,
        /// Switches left untyped.
        untyped: u64,
        /// All switches.
        total: u64,
    },
    /// The analysis works per CPU, but the trace does not say on which CPU
    /// its events happened.
    #[error("{analysis}: needs the CPU of every event, but {path} has no CPU column (perf script printed without `cpu`): print it again with `cpu` among the `perf script -F` fields, or give the perf.data file itself")]
    NeedsCpuColumn {
        /// Which analysis.
        analysis: String,
        /// The trace file.
        path: String,
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

/// Share of untyped sched_switch events (per mille) from which analyses
/// refuse to run: below it they are counted losses (a decoder warning), like
/// lost events; at or above it the thread states would be guesses.
const UNTYPED_SWITCH_LIMIT_PERMILLE: u64 = 10;

/// Whether `analysis` can run on `trace`: its sched_switch events must be
/// typed (fewer than 1% left untyped), and a per-CPU analysis needs the
/// CPU of every event ([`Trace::cpu_unknown`] unset).
pub fn check_input(trace: &Trace, analysis: &str, per_cpu: bool) -> Result<(), AnalysisError> {
    let total = trace.count("sched:sched_switch");
    let untyped = trace
        .untyped
        .get("sched:sched_switch")
        .copied()
        .unwrap_or(0);
    if untyped > 0
        && untyped.saturating_mul(1000) >= total.saturating_mul(UNTYPED_SWITCH_LIMIT_PERMILLE)
    {
        return Err(AnalysisError::UntypedSwitches {
            analysis: analysis.to_string(),
            untyped,
            total,
        });
    }
    if per_cpu && trace.cpu_unknown {
        return Err(AnalysisError::NeedsCpuColumn {
            analysis: analysis.to_string(),
            path: trace.path.clone(),
        });
    }
    Ok(())
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
