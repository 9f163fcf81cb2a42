//! prev_state decoding beyond the kernel's own letters: the letters of
//! trace-cmd's sched_switch plugin (positional, whatever the kernel calls
//! the bits) and trace-cmd's raw numeric print (decoded once the whole file
//! has shown which bit layout it uses). Letters an older libtraceevent
//! shifted are the `shifted` module's.

use schedscope_trace::{Event, EventData, PrevState, Severity, StateLayout, Trace};

/// The prev_state of the short form. trace-cmd's sched_switch plugin
/// (libtraceevent) prints the state bits positionally from the table
/// `"SDTtZXxW"` (bit 0 = S, ..., bit 7 = W), whatever the kernel calls them:
/// on 6.x kernels the kernel's `I` (0x80) comes out as `W` and `Z` (0x20) as
/// `X` (checked against tracefs text of the same buffer, see
/// fixtures/ftrace/README.md). Map the letters back to the bits.
pub(super) fn short_state(s: &str) -> Option<PrevState> {
    const POSITIONAL: &[u8; 8] = b"SDTtZXxW";
    let (s, preempted) = match s.strip_suffix('+') {
        Some(r) => (r, true),
        None => (s, false),
    };
    let mut bits = 0u16;
    for part in s.split('|') {
        let b = part.as_bytes();
        bits |= match (
            b.len(),
            POSITIONAL.iter().position(|&c| Some(&c) == b.first()),
        ) {
            (1, Some(i)) => 1 << i,
            _ => PrevState::parse_text(part)?.bits,
        };
    }
    Some(PrevState { bits, preempted })
}

/// Decode the numeric prev_states (trace-cmd's raw sched_switch
/// print). Text carries no format file, so the layout is the documented
/// one of the kernel versions whose preemption marker the values show:
/// the marker is the one bit a kernel sets alone on a preempted
/// switch-out, so the largest lone power of two at or above 0x100 among
/// the values names it (0x100 TASK_REPORT_MAX of 4.14+, else the
/// TASK_STATE_MAX of an older kernel). Without any lone marker, a value
/// with 0x80 and 0x02 together (D|K, killable, only before 4.14; 4.14+
/// reports I alone) means an older kernel, otherwise 4.14+ is assumed.
/// The choice is stated in an Info warning.
pub(super) fn resolve_numeric(trace: &mut Trace, numeric: &[(usize, u64)]) {
    if numeric.is_empty() {
        return;
    }
    let lone = numeric
        .iter()
        .map(|&(_, v)| v)
        .filter(|&v| v >= 0x100 && v.is_power_of_two() && v <= 4096)
        .max();
    let (layout, why) = match lone {
        Some(0x100) => (
            StateLayout::Report,
            "the value 256 alone (a preempted switch-out)".to_string(),
        ),
        Some(m) => (
            StateLayout::Legacy { marker: m },
            format!("the value {m} alone (a preempted switch-out)"),
        ),
        None if numeric.iter().any(|&(_, v)| v & 0x82 == 0x82) => (
            StateLayout::Legacy { marker: 4096 },
            "D|K states (130) and no preempted switch-out".to_string(),
        ),
        None => (
            StateLayout::Report,
            "no preempted switch-out and no state only older kernels use".to_string(),
        ),
    };
    let mut unknown = 0u64;
    for &(i, v) in numeric {
        let st = PrevState::from_raw(v, layout);
        unknown += st.is_unknown() as u64;
        if let Some(Event {
            data: EventData::Switch { prev_state, .. },
            ..
        }) = trace.events.get_mut(i)
        {
            *prev_state = st;
        }
    }
    let n = numeric.len() as u64;
    trace.warn(
        Severity::Info,
        format!(
            "sched:sched_switch: {n} numeric prev_state values (trace-cmd's raw print, no format in the text) decoded with the bit layout of {}, assumed from {why}",
            layout.kernels()
        ),
        n,
    );
    if unknown > 0 {
        trace.warn(
            Severity::DataLoss,
            format!(
                "sched:sched_switch: {unknown} numeric prev_state values have bits that layout does not define, kept as an unknown state"
            ),
            unknown,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_form_states_are_positional() {
        let st = |x| short_state(x).unwrap();
        assert_eq!(st("S").bits, PrevState::S);
        assert_eq!(st("W").bits, PrevState::I);
        assert_eq!(st("X").bits, PrevState::Z);
        assert_eq!(st("Z").bits, PrevState::X);
        assert_eq!(st("R"), PrevState::default());
        assert!(st("R+").preempted);
        assert_eq!(st("D|W").bits, PrevState::D | PrevState::I);
        assert!(st("Q").is_unknown() && !st("Q").is_runnable());
    }
}
