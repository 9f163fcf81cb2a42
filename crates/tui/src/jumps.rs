//! Jump targets that are searched for when Enter is pressed on a row,
//! because finding them takes a pass over a thread's intervals or over the
//! events: the longest waker-preempted wait of an lhp waker pair, the
//! densest burst of an IPI callsite's requests, the densest stretch of a
//! profile symbol's samples. The request and sample times are gathered
//! once, on the first such Enter, and kept.
//!
//! The search reads the timeline, the events and the cache it is given
//! ([`Sources`]), not the UI's `Data`, which holds the tables whose rows
//! name these targets: the modules depend one way only (`data` ->
//! `tables` -> `jumps`).

use crate::index::Tid;
use crate::overlay::{Bursts, BURST_NS};
use schedscope_analysis::tlb::profile::leaf_samples;
use schedscope_analysis::{Context, Options, ThreadState, Timeline};
use schedscope_trace::Trace;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Window of a profile row's jump: the 10 ms with the most samples of the
/// symbol (profiles sample at 10 ms to 1 ms per CPU, so 1 ms would hold
/// one or two).
pub const PROFILE_BURST_NS: u64 = 10_000_000;

/// Where Enter on a row takes the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jump {
    /// What the span is, for the status line.
    pub what: String,
    /// Span start (ns, trace clock).
    pub start: u64,
    /// Span end.
    pub end: u64,
    /// CPU lane to select, when the row names one.
    pub cpu: Option<u32>,
    /// Task to select, when the row names one.
    pub tid: Option<Tid>,
}

/// A row's jump target, to be searched for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Find {
    /// The wakeup of `wakee` by `waker` whose sleep overlapped the
    /// waker's Runnable time the most (the lhp section's per-wakeup
    /// waker-preempted time; its pair row reports the sum and the max).
    WakerPair {
        /// The waker.
        waker: Tid,
        /// The woken task.
        wakee: Tid,
    },
    /// The densest [`BURST_NS`] of the IPI/csd requests from `callsite`
    /// asking for `callback` (the tlb section's request rows, keyed as
    /// its top-callsites table).
    Callsite {
        /// Symbolized callsite.
        callsite: String,
        /// Symbolized callback.
        callback: String,
    },
    /// The densest [`PROFILE_BURST_NS`] of the profile samples whose leaf
    /// frame is `(symbol, module)`.
    Symbol {
        /// Function name, as the profile row shows it.
        symbol: String,
        /// Module, as the profile row shows it.
        module: String,
    },
}

/// Event times per key, gathered on first use.
#[derive(Debug, Default)]
pub struct Lazy {
    /// Request times per (callsite, callback).
    requests: OnceLock<HashMap<(String, String), Vec<u64>>>,
    /// Sample times per (symbol, module) of the leaf frame.
    samples: OnceLock<HashMap<(String, String), Vec<u64>>>,
}

/// Group `(time, key)` pairs by key (times stay in input order).
fn by_key(v: impl Iterator<Item = (u64, (String, String))>) -> HashMap<(String, String), Vec<u64>> {
    let mut m: HashMap<(String, String), Vec<u64>> = HashMap::new();
    for (t, k) in v {
        m.entry(k).or_default().push(t);
    }
    for times in m.values_mut() {
        times.sort_unstable();
    }
    m
}

/// What a [`Find`] searches: the loaded timeline and events, the cache
/// of event times, and how the status line names a task.
pub struct Sources<'a> {
    /// The thread-state timeline.
    pub timeline: &'a Timeline,
    /// The decoded events (None when the view was built from a timeline
    /// alone).
    pub trace: Option<&'a Trace>,
    /// Event times gathered on first use.
    pub lazy: &'a Lazy,
    /// `comm[tid]` of a task.
    pub label: &'a dyn Fn(Tid) -> String,
}

impl Find {
    /// Search the jump target in `d`; the error says why there is none.
    pub fn resolve(&self, d: &Sources) -> Result<Jump, String> {
        match self {
            Find::WakerPair { waker, wakee } => longest_waker_wait(d, *waker, *wakee),
            Find::Callsite { callsite, callback } => {
                let times = keyed_times(d, &d.lazy.requests, (callsite, callback), |ctx| {
                    let rows = schedscope_analysis::tlb::requests(ctx).unwrap_or_default();
                    rows.into_iter()
                        .map(|r| (r.ts.0, (r.callsite, r.function)))
                        .collect()
                })?;
                densest_jump(
                    &times,
                    BURST_NS,
                    &format!("requests from {callsite} -> {callback}"),
                )
            }
            Find::Symbol { symbol, module } => {
                let times = keyed_times(d, &d.lazy.samples, (symbol, module), leaf_samples)?;
                densest_jump(&times, PROFILE_BURST_NS, &format!("samples in {symbol}"))
            }
        }
    }
}

/// The times of `key` in `cache`, which `gather` fills on first use from
/// the events.
fn keyed_times(
    d: &Sources,
    cache: &OnceLock<HashMap<(String, String), Vec<u64>>>,
    key: (&String, &String),
    gather: impl FnOnce(&Context) -> Vec<(u64, (String, String))>,
) -> Result<Vec<u64>, String> {
    let trace = d.trace.ok_or("no events kept for this view")?;
    let m = cache.get_or_init(|| {
        let ctx = Context {
            trace,
            timeline: d.timeline,
            opts: &Options::default(),
        };
        by_key(gather(&ctx).into_iter())
    });
    m.get(&(key.0.clone(), key.1.clone()))
        .cloned()
        .ok_or_else(|| "none of them in the events".to_string())
}

/// The jump to the densest `window` of `times` (sorted), named `what`.
pub(crate) fn densest_jump(times: &[u64], window: u64, what: &str) -> Result<Jump, String> {
    let (first, last, n) = Bursts::densest_in(times, window).ok_or("no events")?;
    Ok(Jump {
        what: format!(
            "the densest {} ms of {what} ({n} in it)",
            window / 1_000_000
        ),
        start: first,
        end: last + 1,
        cpu: None,
        tid: None,
    })
}

/// The sleep of `wakee` ended by a wakeup from `waker` during which the
/// waker was Runnable the longest (the lhp section's definition: a
/// Sleeping or Blocked interval followed by a Runnable one that is not a
/// preemption and names the waker; the waker's Runnable time in
/// `[sleep start, wakeup)`). Ties go to the earliest.
fn longest_waker_wait(d: &Sources, waker: Tid, wakee: Tid) -> Result<Jump, String> {
    let tl = d.timeline;
    let end = tl.end;
    // the lhp section maps a reused tid to its last thread
    let wk = tl
        .threads
        .iter()
        .rev()
        .find(|t| t.tid.0 == waker)
        .ok_or("the waker has no timeline")?;
    let runnable: Vec<(u64, u64)> = wk
        .intervals
        .iter()
        .filter(|iv| iv.state == ThreadState::Runnable)
        .map(|iv| (iv.ts.0, iv.end_or(end).0.max(iv.ts.0)))
        .collect();
    let runnable_in = |a: u64, b: u64| -> u64 {
        let i = runnable.partition_point(|r| r.1 <= a);
        runnable[i..]
            .iter()
            .take_while(|r| r.0 < b)
            .map(|r| r.1.min(b).saturating_sub(r.0.max(a)))
            .sum()
    };
    let mut best: Option<(u64, u64, u64, Option<u32>)> = None;
    for th in tl.threads.iter().filter(|t| t.tid.0 == wakee) {
        for (sleep, wake) in th.intervals.pairs() {
            let is_wake = wake.state == ThreadState::Runnable
                && !wake.preempted
                && matches!(sleep.state, ThreadState::Sleeping | ThreadState::Blocked)
                && wake.waker.map(|x| x.0) == Some(waker)
                && waker != wakee;
            if !is_wake {
                continue;
            }
            let ns = runnable_in(sleep.ts.0, wake.ts.0);
            if best.is_none_or(|b| ns > b.0) {
                best = Some((ns, sleep.ts.0, wake.ts.0, wake.cpu.map(|c| c.0)));
            }
        }
    }
    let (ns, start, stop, cpu) = best.ok_or("no wakeup of this pair in the timeline")?;
    Ok(Jump {
        what: format!(
            "the longest waker-preempted wait of {} (woken by {}, Runnable {} of it)",
            (d.label)(wakee),
            (d.label)(waker),
            crate::view::fmt_dur(ns)
        ),
        start,
        end: stop,
        cpu,
        tid: Some(wakee),
    })
}
