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
    #[error("{analysis}: {}{}", missing_text(missing, recorded.as_deref(), record_command, perf_command), improves_text(analysis, improves))]
    MissingEvents {
        /// Which analysis.
        analysis: String,
        /// `system:event` names that are missing and required: the analysis
        /// runs once the trace has these (nothing else is required).
        missing: Vec<String>,
        /// `system:event` names, also absent, that are not required but
        /// would improve the result (the record commands include them).
        /// (A boxed slice keeps the error small.)
        improves: Box<[String]>,
        /// schedscope command that captures the missing and improving events.
        record_command: String,
        /// perf command that captures them.
        perf_command: String,
        /// Of `missing`, the events the recording did enable (they are in
        /// the file's event list) but that have no samples: the message
        /// says so instead of asking to record them (see
        /// [`AnalysisError::note_recorded`]). Boxed: the error stays small.
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        recorded: Option<Box<RecordedEmpty>>,
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
    /// The trace's sched_switch states cannot tell runnable from sleeping
    /// switch-outs (see [`Trace::state_doubt`]).
    #[error("{analysis}: needs to know which switch-outs left a task runnable and which left it sleeping, but the trace's prev_state letters cannot tell: {why}; no numbers are given (record the trace on a kernel with the fix, or as perf.data or trace.dat, whose values carry their own format)")]
    AmbiguousStates {
        /// Which analysis.
        analysis: String,
        /// Why (the decoder's reason).
        why: String,
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

/// Events a recording enabled but has no samples of (in a
/// [`AnalysisError::MissingEvents`]).
#[derive(Clone, Debug, Serialize)]
pub struct RecordedEmpty {
    /// Their `system:event` names (a subset of `missing`).
    pub recorded_empty: Vec<String>,
    /// Tracepoint samples in the file came without their raw payload
    /// (PERF_SAMPLE_RAW) and were skipped: why they may have none.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_payload: bool,
}

/// Share of untyped sched_switch events (per mille) from which analyses
/// refuse to run: below it they are counted losses (a decoder warning), like
/// lost events; at or above it the thread states would be guesses.
const UNTYPED_SWITCH_LIMIT_PERMILLE: u64 = 10;

/// Whether `analysis` can run on `trace`: its sched_switch events must be
/// typed (fewer than 1% left untyped), their states must tell runnable
/// from sleeping ([`Trace::state_doubt`] unset; tlb does not need that),
/// and a per-CPU analysis needs the CPU of every event
/// ([`Trace::cpu_unknown`] unset).
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
    if let Some(why) = trace.state_doubt.as_ref().filter(|_| analysis != "tlb") {
        return Err(AnalysisError::AmbiguousStates {
            analysis: analysis.to_string(),
            why: why.clone(),
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

/// Why a section that runs on either wakeup event lists `sched:sched_wakeup`
/// as required and `sched:sched_waking` as an improvement.
pub(crate) const WAKEUP_NOTE: &str = "either sched:sched_wakeup or sched:sched_waking serves; sched_waking is traced in the waker's context when the wakeup begins, so a woken task's runnable time starts exactly there";

/// The wakeup part of a section's event needs: `sched:sched_wakeup` is
/// required when the trace has neither wakeup event (either serves), and
/// `sched:sched_waking` improves the result when it is absent. Pushes onto
/// `missing` and `improves`.
pub(crate) fn wakeup_needs(
    has_wakeup: bool,
    has_waking: bool,
    missing: &mut Vec<&'static str>,
    improves: &mut Vec<&'static str>,
) {
    if !has_wakeup && !has_waking {
        missing.push("sched:sched_wakeup");
    }
    if !has_waking {
        improves.push("sched:sched_waking");
    }
}

/// The start of a [`AnalysisError::MissingEvents`] message: which events
/// are missing, and what to change (record them; or, for events the
/// recording enabled but has no samples of, why there are none).
fn missing_text(
    missing: &[String],
    recorded: Option<&RecordedEmpty>,
    record_command: &str,
    perf_command: &str,
) -> String {
    let (recorded_empty, no_payload) =
        recorded.map_or((&[][..], false), |r| (&r.recorded_empty[..], r.no_payload));
    let absent: Vec<&str> = missing
        .iter()
        .filter(|m| !recorded_empty.contains(m))
        .map(String::as_str)
        .collect();
    let mut parts = Vec::new();
    if !recorded_empty.is_empty() {
        let (names, n) = (recorded_empty.join(", "), recorded_empty.len());
        let (is, has) = if n == 1 {
            ("is", "has")
        } else {
            ("are", "have")
        };
        parts.push(if no_payload {
            format!("{names} {is} in the recording's event list, but its samples were written without their raw payload (PERF_SAMPLE_RAW; see the warnings) and none could be read: record them with their raw data (`{perf_command}`, or `{record_command}`)")
        } else {
            format!("{names} {is} in the recording's event list but {has} 0 samples: the recording enabled {} and nothing was traced (a --filter, a CPU list (-C) or a per-task recording can do that); record system-wide without a filter: `{record_command}` (or `{perf_command}`)", if n == 1 { "it" } else { "them" })
        });
    }
    if !absent.is_empty() {
        parts.push(format!(
            "the trace has no {} events; record them with `{record_command}` (or `{perf_command}`)",
            absent.join(", ")
        ));
    }
    parts.join("; ")
}

/// The end of a [`AnalysisError::MissingEvents`] message: what would improve
/// the result, and why.
fn improves_text(analysis: &str, improves: &[String]) -> String {
    if improves.is_empty() {
        return String::new();
    }
    let mut why = Vec::new();
    if improves.iter().any(|e| e == "sched:sched_waking") {
        why.push(if analysis == "lhp" {
            LHP_NOTE
        } else {
            WAKEUP_NOTE
        });
    }
    if improves.iter().any(|e| e == "sched:sched_wakeup") && analysis == "latency" {
        why.push("without it only prev_state=R switch-outs start waits; waits after a sleep start at the wakeup");
    }
    if improves
        .iter()
        .any(|e| e != "sched:sched_waking" && e != "sched:sched_wakeup")
    {
        why.push("the other events fill the idle-balancing table");
    }
    let mut s = format!(
        "; not required, {} would improve the result (the commands record {})",
        improves.join(", "),
        if improves.len() == 1 { "it" } else { "them" }
    );
    if !why.is_empty() {
        s.push_str(": ");
        s.push_str(&why.join("; "));
    }
    s
}

/// Why lhp's whole-section error lists the kvm events as required and
/// sched_waking as an improvement.
const LHP_NOTE: &str = "pause-loop exits need kvm:kvm_exit and kvm:kvm_entry with sched:sched_switch and either wakeup event; waker-preempted time needs sched:sched_switch and sched:sched_waking, traced in the waker's own context, and runs with those even without the kvm events";

impl AnalysisError {
    /// A [`AnalysisError::MissingEvents`] with the record commands built from `missing`.
    pub fn missing(analysis: &str, missing: &[&str]) -> AnalysisError {
        AnalysisError::missing_improves(analysis, missing, &[])
    }

    /// A [`AnalysisError::MissingEvents`] for the required events `missing`
    /// and the absent, optional `improves` (the record commands capture
    /// both; the message says why they help).
    pub fn missing_improves(analysis: &str, missing: &[&str], improves: &[&str]) -> AnalysisError {
        let all: Vec<&str> = missing.iter().chain(improves).copied().collect();
        AnalysisError::MissingEvents {
            analysis: analysis.to_string(),
            missing: missing.iter().map(|s| s.to_string()).collect(),
            improves: improves.iter().map(|s| s.to_string()).collect(),
            record_command: format!("schedscope record -e +{} -- COMMAND", all.join(" -e +")),
            perf_command: format!("perf record -a -e {} -- COMMAND", all.join(",")),
            recorded: None,
        }
    }

    /// For a [`AnalysisError::MissingEvents`] on `trace`: note which missing
    /// events the recording enabled (perf.data lists every event it
    /// recorded, with or without samples) but has no samples of, and
    /// whether tracepoint samples came without their raw payload, so that
    /// the message says what is true. Other errors are left alone.
    pub fn note_recorded(&mut self, trace: &Trace) {
        if let AnalysisError::MissingEvents {
            missing, recorded, ..
        } = self
        {
            let listed: Vec<String> = missing
                .iter()
                .filter(|m| trace.count(m) == 0 && trace.event_names.contains(m))
                .cloned()
                .collect();
            if !listed.is_empty() {
                let no_payload = trace
                    .warnings
                    .iter()
                    .any(|w| w.message.contains("carry no RAW payload"));
                *recorded = Some(Box::new(RecordedEmpty {
                    recorded_empty: listed,
                    no_payload,
                }));
            }
        }
    }
}
