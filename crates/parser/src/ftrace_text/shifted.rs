//! Kernels that print every sched_switch `prev_state` one letter off.
//!
//! Between the 4.14 rework of the task-state report and its fix in 4.20
//! (backported to some 4.14.x/4.19.x stable kernels), `sched_switch`
//! recorded `1 << task_state_index(prev)` instead of the state bit: the
//! index of TASK_RUNNING is 0, so a runnable switch-out became `S`, a
//! sleeping one `D`, an uninterruptible one `T`, and so on, while an idle
//! kernel thread (index 8, `I`) became `TASK_REPORT_MAX`, the preemption
//! marker, printed `R+`. Text keeps only the letters, so the shift has to be
//! recognised from the trace itself. The tell is the idle task (pid 0): it
//! always leaves the CPU runnable, so a sane kernel prints `R` (or `R+`)
//! for it and a shifted one `S`; a shifted kernel never prints a plain `R`.
//!
//! [`resolve`] looks at every switch-out of a decoded text trace:
//!
//! * no idle switch-out printed `S`: nothing is changed;
//! * idle switch-outs printed `S` and no plain `R` anywhere (for trace-cmd's
//!   plugin text, which prints `R+` as `R`, no idle switch-out printed
//!   `R`): every state is decoded with the shifted table (printed `S` is
//!   `R`, `D` is `S`, `T` is `D`, `t` is `T`, `X` is `t`, `Z` is `X`, `P`
//!   is `Z`, `I` is `P`), and each `R+` (each plain `R` of trace-cmd's
//!   plugin text) is `I` when the next thing that happens to the task is a
//!   wakeup, a preemption when it is switched in again without one, and
//!   unknown when the trace ends first; an Info warning says so;
//! * both `S` and `R` for the idle task, or `S` for it and plain `R` for
//!   others, or `R+` switch-outs with no wakeup events to tell `I` from a
//!   preemption: the letters cannot be trusted, [`Trace::state_doubt`] is
//!   set (the analyses that need runnable versus sleeping refuse to run) and
//!   a DataLoss warning says why.

use schedscope_trace::{EventData, PrevState, Severity, Tid, Trace, TraceFormat, WakeKind};
use std::collections::HashMap;

/// What the idle task's and the other tasks' switch-outs show.
#[derive(Default, Debug)]
struct Evidence {
    /// Idle (pid 0) switch-outs printed `S`.
    idle_s: u64,
    /// Idle switch-outs printed plain `R`.
    idle_r: u64,
    /// Idle switch-outs in total.
    idle: u64,
    /// Other switch-outs printed plain `R`.
    plain_r: u64,
    /// Switch-outs printed `R+`.
    r_plus: u64,
}

/// Whether the producing tool prints the `+` of `R+` (trace-cmd's
/// sched_switch plugin does not).
fn prints_plus(format: TraceFormat) -> bool {
    format != TraceFormat::TraceCmdText
}

fn gather(trace: &Trace) -> Evidence {
    let mut ev = Evidence::default();
    for e in &trace.events {
        if let EventData::Switch {
            prev_tid,
            prev_state,
            ..
        } = e.data
        {
            let plain_r = prev_state.bits == 0 && !prev_state.preempted;
            if prev_tid == Tid(0) {
                ev.idle += 1;
                if prev_state.bits == PrevState::S && !prev_state.preempted {
                    ev.idle_s += 1;
                }
                if plain_r {
                    ev.idle_r += 1;
                }
            } else if plain_r {
                ev.plain_r += 1;
            }
            if prev_state.bits == 0 && prev_state.preempted {
                ev.r_plus += 1;
            }
        }
    }
    ev
}

/// The true state of a state printed by a shifted kernel, for everything but
/// the marker (`R+`): one bit down, `S` (bit 0) being runnable; anything
/// that is not a single bit of the 4.14+ table cannot come from such a kernel.
fn unshift(printed: PrevState) -> PrevState {
    let b = printed.bits;
    if printed.preempted || !b.is_power_of_two() || b > PrevState::I {
        return PrevState {
            bits: PrevState::UNKNOWN,
            preempted: printed.preempted,
        };
    }
    PrevState {
        bits: b >> 1,
        preempted: false,
    }
}

/// Detect a shifted `prev_state` table in a text trace (events sorted by
/// time) and decode with it, or mark the states as unreliable; see the
/// module documentation.
pub(crate) fn resolve(trace: &mut Trace) {
    let ev = gather(trace);
    if ev.idle_s == 0 {
        return;
    }
    let plus = prints_plus(trace.format);
    let contradicted = ev.idle_r > 0 || (plus && ev.plain_r > 0);
    let has_wakeups = trace.events.iter().any(|e| {
        matches!(
            e.data,
            EventData::Wakeup {
                kind: WakeKind::Wakeup | WakeKind::Waking,
                ..
            }
        )
    });
    // The switch-outs whose meaning is I-or-preempted.
    let ambiguous = if plus { ev.r_plus } else { ev.plain_r };
    if contradicted || (ambiguous > 0 && !has_wakeups) {
        let why = if contradicted {
            let mut other = Vec::new();
            if ev.idle_r > 0 {
                other.push(format!("it also switched out as R {} times", ev.idle_r));
            }
            if plus && ev.plain_r > 0 {
                other.push(format!(
                    "{} other switch-outs print a plain R, which such kernels never print",
                    ev.plain_r
                ));
            }
            format!(
                "the idle task switched out as S {} of {} times, the sign of a kernel that prints every prev_state shifted by one letter (some 4.14 to 4.19 kernels), but {}: the evidence is mixed",
                ev.idle_s,
                ev.idle,
                other.join(" and ")
            )
        } else {
            format!(
                "the idle task switched out as S {} of {} times, the sign of a kernel that prints every prev_state shifted by one letter (some 4.14 to 4.19 kernels), where {} {} either a preemption or an idle kernel thread (I), and the trace has no sched_wakeup or sched_waking events to tell them apart",
                ev.idle_s,
                ev.idle,
                ambiguous,
                if plus { "R+ switch-outs are" } else { "R switch-outs are" }
            )
        };
        trace.warn(
            Severity::DataLoss,
            format!(
                "sched:sched_switch: prev_state cannot be trusted: {why}; runnable and sleeping switch-outs cannot be told apart, so the sections that depend on them are not computed"
            ),
            ev.idle_s,
        );
        trace.state_doubt = Some(why);
        return;
    }
    // Decode with the shifted table; the I-or-preempted ones by what comes
    // next for the task (walking backwards: the next event seen so far).
    let mut next_is_wakeup: HashMap<Tid, bool> = HashMap::new();
    let (mut as_idle, mut as_preempted, mut at_end, mut unknown) = (0u64, 0u64, 0u64, 0u64);
    for e in trace.events.iter_mut().rev() {
        match &mut e.data {
            EventData::Wakeup {
                kind: WakeKind::Wakeup | WakeKind::Waking,
                tid,
                ..
            } => {
                next_is_wakeup.insert(*tid, true);
            }
            EventData::Switch {
                prev_tid,
                prev_state,
                next_tid,
                ..
            } => {
                let marker = if plus {
                    prev_state.bits == 0 && prev_state.preempted
                } else {
                    prev_state.bits == 0
                };
                if marker {
                    match next_is_wakeup.get(prev_tid) {
                        Some(true) => {
                            *prev_state = PrevState {
                                bits: PrevState::I,
                                preempted: false,
                            };
                            as_idle += 1;
                        }
                        Some(false) => {
                            *prev_state = PrevState {
                                bits: 0,
                                preempted: plus,
                            };
                            as_preempted += 1;
                        }
                        None => {
                            *prev_state = PrevState {
                                bits: PrevState::UNKNOWN,
                                preempted: false,
                            };
                            at_end += 1;
                        }
                    }
                } else {
                    *prev_state = unshift(*prev_state);
                    unknown += prev_state.is_unknown() as u64;
                }
                next_is_wakeup.insert(*next_tid, false);
            }
            _ => {}
        }
    }
    let marker_text = if plus {
        "R+"
    } else {
        "R (trace-cmd's plugin drops the +)"
    };
    trace.warn(
        Severity::Info,
        format!(
            "sched:sched_switch: this kernel prints every prev_state shifted by one letter (a bug of some 4.14 to 4.19 kernels: the idle task switched out as S {} of {} times and no switch-out is a plain R), so the states were decoded with the shifted table (printed S is R, D is S, T is D, t is T, X is t, Z is X, P is Z, I is P); of the {marker_text} switch-outs, {as_idle} were ended by a wakeup and read as I (idle, sleeping), {as_preempted} were switched in again without one and read as preempted, and {at_end} are followed by nothing until the trace ends and are kept as an unknown state",
            ev.idle_s, ev.idle
        ),
        ev.idle_s,
    );
    if unknown > 0 {
        trace.warn(
            Severity::DataLoss,
            format!(
                "sched:sched_switch: {unknown} switch-outs print a state a kernel with the shifted table cannot print, kept as an unknown state"
            ),
            unknown,
        );
    }
}
