//! Gang co-run (docs/design.md, "Gang co-run").
//!
//! A gang is a set of threads that should run together: by default every
//! process (tgid) with two or more threads that were Running or Runnable, and
//! every VM (the threads of one tgid that emitted kvm_exit / kvm_entry; a VM's
//! gang holds only its vCPU threads); or gangs given with `--gang-of`
//! (`pid=N`, `tids=A,B,C`, `comm=REGEX`, `cgroup=PATH`). Finding them is
//! [`crate::groups`]' job (shared with lhp); their types are re-exported
//! here.
//!
//! With running(t) = members Running and active(t) = members Running or
//! Runnable, and alive(t) = members forked (or present when the trace
//! started) and not Dead:
//! * `corun_ratio` = time(running = alive, running >= 1) / time(running >= 1)
//! * `fragmented_ns` = time(1 <= running < active)
//! * `running_hist_ns[k]` = time with exactly k members running
//! * `pair_corun[i][j]` = time(i and j running) / time(i or j running)
//! * `demand_corun_ratio` = time(running = active, active >= 2) /
//!   time(active >= 2): whether the members that want a CPU get one
//!   together (members asleep do not count against it, as they do in
//!   `corun_ratio`)
//! * on traces that lost events, for gangs with a member on a lossy CPU:
//!   `fragmented_ns_min/max` and `corun_ratio_min/max` ([`LossBounds`])
//!
//! Each gang is one sweep over the merged state transitions of its members
//! (taken from the [`crate::Timeline`]); gangs are computed in parallel.

use crate::groups::check_sched_events;
pub use crate::groups::{explicit_gang, resolve_gangs, GangDef, GangKind, GangSpec};
use crate::timeline::{ThreadState, Timeline};
use crate::{AnalysisError, Context};
use rayon::prelude::*;
use schedscope_trace::{Tid, Trace, Ts};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How many of the longest fragmented episodes each gang keeps.
pub const EPISODES_KEPT: usize = 10;

/// A stretch of time in which some members ran while others waited for a CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Episode {
    /// Start (trace clock, ns).
    pub start_ns: u64,
    /// Length (ns).
    pub duration_ns: u64,
    /// Members that were Runnable (waiting) at some point during it.
    pub waiting: Vec<Tid>,
}

/// The co-run numbers of one gang.
#[derive(Clone, Debug, Serialize)]
pub struct Gang {
    /// Display name.
    pub name: String,
    /// How it was formed.
    pub kind: GangKind,
    /// The process, when the gang is one process or VM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tgid: Option<Tid>,
    /// Member tids, ascending.
    pub members: Vec<Tid>,
    /// Comm of each member (parallel to `members`; empty when unknown), as
    /// the timeline last knew it. Not in the JSON (its keys are a contract).
    #[serde(skip)]
    pub member_comms: Vec<String>,
    /// vCPU ids of the members (VMs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vcpus: Vec<Option<u32>>,
    /// time(all alive members running) / time(any member running); 0 when none ran.
    pub corun_ratio: f64,
    /// Time (ns) with 1 <= running < active: some ran while siblings waited.
    pub fragmented_ns: u64,
    /// `fragmented_ns` / `any_running_ns`.
    pub fragmented_ratio: f64,
    /// Index k = time (ns) with exactly k members running.
    pub running_hist_ns: Vec<u64>,
    /// `[i][j]` = time(i and j running) / time(i or j running); 1 on the diagonal
    /// when i ran, 0 when neither ran.
    pub pair_corun: Vec<Vec<f64>>,
    /// Time (ns) any member ran.
    pub any_running_ns: u64,
    /// Time (ns) all alive members ran together.
    pub all_running_ns: u64,
    /// Run time (ns) of each member.
    pub member_running_ns: Vec<u64>,
    /// The longest fragmented episodes, longest first.
    pub episodes: Vec<Episode>,
    /// The co-run ratio of demand: time(every member that wants a CPU,
    /// Running or Runnable, is Running) / time(at least two members want
    /// one); 0 when two never did. Unlike `corun_ratio`, members that
    /// sleep do not count against it.
    pub demand_corun_ratio: f64,
    /// The denominator of `demand_corun_ratio` (ns): time with at least
    /// two members Running or Runnable.
    pub demand_ns: u64,
    /// Gangs with a member on a CPU that lost events: the least
    /// `fragmented_ns` can be given the loss (see [`LossBounds`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragmented_ns_min: Option<u64>,
    /// The most `fragmented_ns` can be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragmented_ns_max: Option<u64>,
    /// The least `corun_ratio` can be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corun_ratio_min: Option<f64>,
    /// The most `corun_ratio` can be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corun_ratio_max: Option<f64>,
}

/// How far lost events can move a gang's figures.
///
/// `U` is the members' uncertain time: the length of every uncertain
/// window (`crate::idle`'s bounds: inferred switch-ins' `[earliest,
/// latest]`, unknown stretches, loss records' spans) on a CPU where a
/// member ran in it or next to it (any CPU's, when loss records say events
/// of any task may be missing), plus, on such a trace, each member's
/// sleeps that end in a switch-in with no wakeup, from the first uncertain
/// instant within the sleep (a lost wakeup lies where events may be
/// missing; a sleep no window overlaps lost none). Running, co-running and fragmented
/// time each move by at most `U`: `fragmented_ns` in `[frag - U, frag +
/// U]`, and with `C` = all-running time and `R` = any-running time,
/// `corun_min = max(0, (C - U) / (R + U))`, `corun_max = min(1, (C + U) /
/// max(R - U, C + U))`.
pub struct LossBounds;

impl LossBounds {
    /// The members' uncertain time (ns) in `windows` (per CPU; `all`:
    /// the same windows indexed together).
    fn uncertain(
        members: &[Tid],
        timeline: &Timeline,
        windows: &[Vec<(u64, u64)>],
        all: &crate::idle::bounds::AllWindows,
        marked: bool,
    ) -> u64 {
        let mut u = 0;
        for (c, w) in windows.iter().enumerate() {
            let runs = timeline.runs(c);
            for &(a, b) in w {
                // (a loss record's span may hold any member's wakeup)
                let member = marked || {
                    // Runs overlapping or touching [a, b].
                    let k = runs.partition_point(|r| r.end.is_some_and(|e| e.0 < a));
                    runs.range(k..runs.len())
                        .take_while(|r| r.ts.0 <= b)
                        .any(|r| members.contains(&r.tid))
                };
                if member {
                    u += b - a;
                }
            }
        }
        if windows.iter().all(Vec::is_empty) {
            return u;
        }
        // A member switched in from a sleep: its wakeup was lost, and a
        // lost wakeup lies where events may be missing (an uncertain window
        // on any CPU): when it started to wait is unknown from the first
        // such instant within the sleep. A sleep no window overlaps lost
        // no wakeup.
        for &m in members {
            let Some(t) = timeline.thread(m) else {
                continue;
            };
            for (a, b) in t.intervals.pairs() {
                let woken = matches!(a.state, ThreadState::Runnable | ThreadState::Running);
                if b.state == ThreadState::Running && !woken {
                    if let Some(from) = all.first_in(a.ts.0, b.ts.0) {
                        u += b.ts.0.saturating_sub(from);
                    }
                }
            }
        }
        u
    }

    /// Fill in `g`'s bounds when `u > 0`.
    fn apply(g: &mut Gang, u: u64) {
        if u == 0 {
            return;
        }
        let (c, r) = (g.all_running_ns as f64, g.any_running_ns as f64);
        let u_f = u as f64;
        g.fragmented_ns_min = Some(g.fragmented_ns.saturating_sub(u));
        g.fragmented_ns_max = Some(g.fragmented_ns + u);
        g.corun_ratio_min = Some(((c - u_f) / (r + u_f)).max(0.0));
        let den = (r - u_f).max(c + u_f);
        g.corun_ratio_max = Some(if den > 0.0 {
            ((c + u_f) / den).min(1.0)
        } else {
            1.0
        });
    }
}

/// The `gang` section.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GangReport {
    /// One entry per gang, in the order: VMs, processes (by tgid), explicit.
    pub gangs: Vec<Gang>,
    /// Why the list is empty or partial, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Coarse member state for the sweep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cls {
    Gone,
    Idle,
    Runnable,
    Running,
}

fn cls(s: ThreadState) -> Cls {
    match s {
        ThreadState::Running => Cls::Running,
        ThreadState::Runnable => Cls::Runnable,
        // Unknown (e.g. after lost events): alive, but not known to run or wait.
        ThreadState::Sleeping
        | ThreadState::Blocked
        | ThreadState::Other
        | ThreadState::Unknown => Cls::Idle,
        ThreadState::Dead => Cls::Gone,
    }
}

/// Compute the co-run numbers of one gang from the timeline.
///
/// A member is alive from its fork (when the trace saw it; otherwise from the
/// start of the trace: it existed, its state just was not known yet) until it
/// is Dead. Alive members whose state is not known yet count as not running.
pub fn compute(def: &GangDef, timeline: &Timeline, trace: &Trace) -> Gang {
    sweep(def, timeline, trace, None)
}

/// A stretch of time with constant member counts (for Parquet export and the TUI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GangInterval {
    /// Start (ns).
    pub start_ns: u64,
    /// End (ns, exclusive).
    pub end_ns: u64,
    /// Members Running.
    pub running: u32,
    /// Members Running or Runnable.
    pub active: u32,
    /// Members alive.
    pub alive: u32,
}

/// The gang's timeline as maximal intervals of constant (running, active,
/// alive) counts, covering the trace from the first member event to its end.
pub fn intervals(def: &GangDef, timeline: &Timeline, trace: &Trace) -> Vec<GangInterval> {
    let mut out = Vec::new();
    sweep(def, timeline, trace, Some(&mut out));
    out
}

/// The members' transitions (ts, member, class), in time order, from their
/// contiguous intervals: a member is Idle from its birth (or the trace
/// start) to its first interval and Gone after its last and in any gap.
fn transitions(def: &GangDef, timeline: &Timeline, trace: &Trace) -> Vec<(Ts, u32, Cls)> {
    let mut tr: Vec<(Ts, u32, Cls)> = Vec::new();
    for (m, tid) in def.members.iter().enumerate() {
        let Some(t) = timeline.thread(*tid) else {
            continue;
        };
        let birth = trace
            .tasks
            .by_tid(*tid)
            .and_then(|k| k.fork_ts)
            .filter(|&f| f > timeline.start)
            .unwrap_or(timeline.start);
        if t.intervals.first().is_some_and(|iv| iv.ts > birth) {
            tr.push((birth, m as u32, Cls::Idle));
        }
        let mut last_end: Option<Ts> = None;
        for iv in &t.intervals {
            if last_end.is_some_and(|e| e < iv.ts) {
                tr.push((last_end.unwrap_or(iv.ts), m as u32, Cls::Gone));
            }
            tr.push((iv.ts, m as u32, cls(iv.state)));
            last_end = iv.end;
        }
        if let Some(e) = last_end {
            tr.push((e, m as u32, Cls::Gone));
        }
    }
    tr.sort_by_key(|&(ts, m, _)| (ts, m));
    tr
}

/// The [`EPISODES_KEPT`] longest fragmented episodes: a min-heap of
/// (duration, earlier start wins ties, who waited).
#[derive(Default)]
struct TopEpisodes(BinaryHeap<Reverse<Kept>>);

/// A kept episode: (duration, start (reversed: earlier wins ties), who waited).
type Kept = (u64, Reverse<u64>, Vec<Tid>);

impl TopEpisodes {
    /// Close the open episode `ep` (if any) at `at`, keeping it if it is
    /// among the longest.
    fn close(&mut self, ep: &mut Option<(Ts, Vec<bool>)>, at: Ts, def: &GangDef) {
        let heap = &mut self.0;
        if let Some((start, waited)) = ep.take() {
            let dur = at.0.saturating_sub(start.0);
            if dur == 0 {
                return;
            }
            let better = heap.len() < EPISODES_KEPT
                || heap
                    .peek()
                    .is_some_and(|Reverse((d, s, _))| (dur, Reverse(start.0)) > (*d, *s));
            if better {
                let who = waited
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| **w)
                    .map(|(i, _)| def.members[i])
                    .collect();
                heap.push(Reverse((dur, Reverse(start.0), who)));
                if heap.len() > EPISODES_KEPT {
                    heap.pop();
                }
            }
        }
    }

    /// The kept episodes, longest first (earlier first among equals).
    fn into_sorted(self) -> Vec<Episode> {
        let mut episodes: Vec<Episode> = self
            .0
            .into_iter()
            .map(|Reverse((d, Reverse(s), who))| Episode {
                start_ns: s,
                duration_ns: d,
                waiting: who,
            })
            .collect();
        episodes.sort_by_key(|e| (Reverse(e.duration_ns), e.start_ns));
        episodes
    }
}

/// Pairwise co-run: for members a and b, the time both ran over the time
/// either ran (`both` holds the first, upper triangle, row-major).
fn pair_corun(member_run: &[u64], both: &[u64]) -> Vec<Vec<f64>> {
    let n = member_run.len();
    let mut pair = vec![vec![0.0; n]; n];
    for a in 0..n {
        for b in 0..n {
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            let together = if a == b {
                member_run[a]
            } else {
                both[lo * n + hi]
            };
            let either = member_run[a] + member_run[b] - together;
            pair[a][b] = ratio(together, either);
        }
    }
    pair
}

/// The members' classes during [`sweep`] and how many are in each.
struct Counts {
    state: Vec<Cls>,
    running: usize,
    active: usize,
    alive: usize,
    /// The members running now.
    running_set: Vec<usize>,
}

impl Counts {
    /// Member `m` is now in class `c`.
    fn apply(&mut self, m: usize, c: Cls) {
        let old = self.state[m];
        if old == c {
            return;
        }
        match old {
            Cls::Running => {
                self.running -= 1;
                self.active -= 1;
                self.alive -= 1;
                if let Some(p) = self.running_set.iter().position(|&x| x == m) {
                    self.running_set.swap_remove(p);
                }
            }
            Cls::Runnable => {
                self.active -= 1;
                self.alive -= 1;
            }
            Cls::Idle => self.alive -= 1,
            Cls::Gone => {}
        }
        match c {
            Cls::Running => {
                self.running += 1;
                self.active += 1;
                self.alive += 1;
                self.running_set.push(m);
            }
            Cls::Runnable => {
                self.active += 1;
                self.alive += 1;
            }
            Cls::Idle => self.alive += 1,
            Cls::Gone => {}
        }
        self.state[m] = c;
    }
}

/// The time sums [`sweep`] accumulates.
struct Totals {
    /// Time with k members running, k = 0..=n.
    hist: Vec<u64>,
    /// Per member pair (lo * n + hi): time both ran.
    both: Vec<u64>,
    member_run: Vec<u64>,
    any: u64,
    all: u64,
    frag: u64,
    demand: u64,
    demand_met: u64,
}

impl Totals {
    fn new(n: usize) -> Totals {
        Totals {
            hist: vec![0; n + 1],
            both: vec![0; n * n],
            member_run: vec![0; n],
            any: 0,
            all: 0,
            frag: 0,
            demand: 0,
            demand_met: 0,
        }
    }

    /// `dur` ns spent with the counts `k`.
    fn account(&mut self, dur: u64, k: &Counts) {
        let n = k.state.len();
        if k.active >= 2 {
            self.demand += dur;
            self.demand_met += dur * u64::from(k.running == k.active);
        }
        self.hist[k.running] += dur;
        if k.running == 0 {
            return;
        }
        self.any += dur;
        if k.running == k.alive {
            self.all += dur;
        }
        if k.running < k.active {
            self.frag += dur;
        }
        for (a, &x) in k.running_set.iter().enumerate() {
            self.member_run[x] += dur;
            for &y in &k.running_set[a + 1..] {
                let (lo, hi) = if x < y { (x, y) } else { (y, x) };
                self.both[lo * n + hi] += dur;
            }
        }
    }
}

/// Append `[start, end)` with counts `k` to the interval list `o`, merged
/// with the last interval when it continues it with the same counts.
fn push_interval(o: &mut Vec<GangInterval>, start: Ts, end: Ts, k: &Counts) {
    let (r, a, l) = (k.running as u32, k.active as u32, k.alive as u32);
    match o.last_mut() {
        Some(g) if g.end_ns == start.0 && (g.running, g.active, g.alive) == (r, a, l) => {
            g.end_ns = end.0
        }
        _ => o.push(GangInterval {
            start_ns: start.0,
            end_ns: end.0,
            running: r,
            active: a,
            alive: l,
        }),
    }
}

fn sweep(
    def: &GangDef,
    timeline: &Timeline,
    trace: &Trace,
    mut out: Option<&mut Vec<GangInterval>>,
) -> Gang {
    let n = def.members.len();
    let tr = transitions(def, timeline, trace);

    let mut k = Counts {
        state: vec![Cls::Gone; n],
        running: 0,
        active: 0,
        alive: 0,
        running_set: Vec::new(),
    };
    let mut t = Totals::new(n);
    // Current fragmented episode: start and who waited.
    let mut ep: Option<(Ts, Vec<bool>)> = None;
    let mut top = TopEpisodes::default();
    let mut close_episode = |ep: &mut Option<(Ts, Vec<bool>)>, at: Ts| top.close(ep, at, def);

    let mut prev = tr.first().map(|t| t.0).unwrap_or(timeline.start);
    let mut i = 0;
    let end = timeline.end;
    while i <= tr.len() {
        let ts = if i < tr.len() { tr[i].0 } else { end.max(prev) };
        // Account [prev, ts) with the current counts.
        let dur = ts.0.saturating_sub(prev.0);
        if dur > 0 {
            if let Some(o) = out.as_deref_mut() {
                push_interval(o, prev, ts, &k);
            }
            t.account(dur, &k);
        }
        if i == tr.len() {
            close_episode(&mut ep, ts);
            break;
        }
        // Apply every transition at ts.
        while i < tr.len() && tr[i].0 == ts {
            let (_, m, c) = tr[i];
            k.apply(m as usize, c);
            i += 1;
        }
        // Episode bookkeeping after the changes at ts.
        if k.running >= 1 && k.running < k.active {
            let e = ep.get_or_insert_with(|| (ts, vec![false; n]));
            for (m, s) in k.state.iter().enumerate() {
                if *s == Cls::Runnable {
                    e.1[m] = true;
                }
            }
        } else {
            close_episode(&mut ep, ts);
        }
        prev = ts;
    }

    let episodes = top.into_sorted();
    let pair = pair_corun(&t.member_run, &t.both);
    Gang {
        name: def.name.clone(),
        kind: def.kind,
        tgid: def.tgid,
        members: def.members.clone(),
        member_comms: def
            .members
            .iter()
            .map(|&t| {
                timeline
                    .thread(t)
                    .map(|t| t.comm.clone())
                    .unwrap_or_default()
            })
            .collect(),
        vcpus: def.vcpus.clone(),
        corun_ratio: ratio(t.all, t.any),
        fragmented_ns: t.frag,
        fragmented_ratio: ratio(t.frag, t.any),
        running_hist_ns: t.hist,
        pair_corun: pair,
        any_running_ns: t.any,
        all_running_ns: t.all,
        member_running_ns: t.member_run,
        episodes,
        demand_corun_ratio: ratio(t.demand_met, t.demand),
        demand_ns: t.demand,
        fragmented_ns_min: None,
        fragmented_ns_max: None,
        corun_ratio_min: None,
        corun_ratio_max: None,
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Compute the gang section.
pub fn analyze(ctx: &Context) -> Result<GangReport, AnalysisError> {
    check_sched_events(ctx.trace, "gang")?;
    let defs = resolve_gangs(ctx)?;
    let windows = crate::idle::bounds::uncertain_windows(ctx.trace, ctx.timeline);
    let all = crate::idle::bounds::AllWindows::new(&windows);
    let gangs: Vec<Gang> = defs
        .par_iter()
        .map(|d| {
            let mut g = compute(d, ctx.timeline, ctx.trace);
            let marked = !ctx.trace.loss_marks.is_empty();
            let u = LossBounds::uncertain(&d.members, ctx.timeline, &windows, &all, marked);
            LossBounds::apply(&mut g, u);
            g
        })
        .collect();
    let note = if !gangs.is_empty() {
        None
    } else if ctx.timeline.threads.iter().all(|t| t.tgid.is_none()) {
        Some("the trace has no process (tgid) information, so there are no automatic gangs; define gangs with --gang-of tids=A,B,C or comm=REGEX".to_string())
    } else {
        Some("no process had two or more threads that ran or waited for a CPU, and no VM (kvm_exit) was seen".to_string())
    };
    let note = match (note, ctx.trace.lost) {
        (n, 0) => n,
        (n, lost) => Some(format!(
            "{}the kernel lost {lost} events: members whose state is unknown after a loss count as alive and not running",
            n.map(|n| format!("{n}; ")).unwrap_or_default()
        )),
    };
    Ok(GangReport { gangs, note })
}
