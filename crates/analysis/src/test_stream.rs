//! Helpers for the tests that feed an analysis's push consumer a stream
//! of a trace's events and compare it with the analysis of the whole
//! trace.

use schedscope_trace::trace::Dropped;
use schedscope_trace::{Event, Trace};

/// Slice sizes the push consumers are fed with, in turn: one event at a
/// time, odd sizes, all at once, and uneven slices with empty ones.
pub(crate) const SLICINGS: &[&[usize]] = &[&[1], &[7], &[70_000], &[usize::MAX], &[0, 3, 1, 11, 2]];

/// Feed `events` to `push` in consecutive slices of the sizes `sizes`
/// (cycled).
pub(crate) fn push_in(events: &[Event], sizes: &[usize], mut push: impl FnMut(&[Event])) {
    let (mut i, mut k) = (0, 0);
    while i < events.len() {
        let j = i.saturating_add(sizes[k % sizes.len()]).min(events.len());
        push(&events[i..j]);
        (i, k) = (j, k + 1);
    }
}

/// Take the events out of `trace`, as a stream's trace has none; its
/// span and event count stay (in `dropped`, as a filtered load keeps them).
pub(crate) fn take_events(trace: &mut Trace) -> Vec<Event> {
    trace.dropped = Some(Dropped {
        total: trace.event_count(),
        first: trace.start(),
        last: trace.end(),
    });
    std::mem::take(&mut trace.events)
}
