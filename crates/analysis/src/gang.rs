//! Gang co-run (DESIGN.md "Analyses — definitions").
//!
//! A gang is a set of threads that should run together: by default every
//! process (tgid) with two or more threads that were Running or Runnable, and
//! every VM (the threads of one tgid that emitted kvm_exit / kvm_entry; a VM's
//! gang holds only its vCPU threads); or gangs given with `--gang-of`
//! (`pid=N`, `tids=A,B,C`, `comm=REGEX`, `cgroup=PATH`).
//!
//! With running(t) = members Running and active(t) = members Running or
//! Runnable, and alive(t) = members forked (or present when the trace
//! started) and not Dead:
//! * `corun_ratio` = time(running = alive, running >= 1) / time(running >= 1)
//! * `fragmented_ns` = time(1 <= running < active)
//! * `running_hist_ns[k]` = time with exactly k members running
//! * `pair_corun[i][j]` = time(i and j running) / time(i or j running)
//!
//! Each gang is one sweep over the merged state transitions of its members
//! (taken from the [`crate::Timeline`]); gangs are computed in parallel.

use crate::timeline::{ThreadState, Timeline};
use crate::{AnalysisError, Context};
use rayon::prelude::*;
use schedscope_trace::{EventData, Tid, Trace, Ts};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

/// How many of the longest fragmented episodes each gang keeps.
pub const EPISODES_KEPT: usize = 10;

/// How a gang was formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GangKind {
    /// The vCPU threads of one VM (automatic).
    Vm,
    /// The threads of one process (automatic or `pid=N`).
    Process,
    /// Given explicitly with `--gang-of` (`tids=`, `comm=`).
    Explicit,
}

/// A gang's members before analysis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GangDef {
    /// Display name ("VM 4242 (qemu-system-x86)", "process 77 (ebizzy)", or the spec).
    pub name: String,
    /// How it was formed.
    pub kind: GangKind,
    /// The process, when the gang is one process or VM.
    pub tgid: Option<Tid>,
    /// Member tids, ascending.
    pub members: Vec<Tid>,
    /// vCPU id of each member (VMs only; `None` when the events had none).
    pub vcpus: Vec<Option<u32>>,
}

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

/// The events every gang computation needs.
pub(crate) fn check_sched_events(trace: &Trace, analysis: &str) -> Result<(), AnalysisError> {
    let mut missing = Vec::new();
    if trace.count("sched:sched_switch") == 0 {
        missing.push("sched:sched_switch");
    }
    if trace.count("sched:sched_waking") == 0 && trace.count("sched:sched_wakeup") == 0 {
        missing.push("sched:sched_waking");
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(AnalysisError::missing(analysis, &missing))
    }
}

/// The vCPU threads seen in kvm_exit / kvm_entry, with their vCPU id.
pub(crate) fn vcpu_threads(trace: &Trace) -> BTreeMap<Tid, Option<u32>> {
    let mut map: HashMap<Tid, Option<u32>> = HashMap::new();
    let mut last: Option<Tid> = None;
    for ev in &trace.events {
        let id = match ev.data {
            EventData::KvmExit { vcpu_id, .. } | EventData::KvmEntry { vcpu_id } => vcpu_id,
            _ => continue,
        };
        if ev.tid.is_idle() || (last == Some(ev.tid) && id.is_none()) {
            continue;
        }
        last = Some(ev.tid);
        let slot = map.entry(ev.tid).or_insert(None);
        if slot.is_none() {
            *slot = id;
        }
    }
    map.into_iter().collect()
}

fn process_name(trace: &Trace, timeline: &Timeline, tgid: Tid) -> String {
    let comm = trace.tasks.comm(tgid);
    if !comm.is_empty() {
        return comm.to_string();
    }
    timeline
        .threads
        .iter()
        .find(|t| t.tgid == Some(tgid))
        .map(|t| t.comm.clone())
        .unwrap_or_default()
}

fn ran_or_waited(t: &crate::ThreadTimeline) -> bool {
    t.intervals
        .iter()
        .any(|iv| matches!(iv.state, ThreadState::Running | ThreadState::Runnable))
}

/// The gangs of this trace: automatic, or from `ctx.opts.gang_specs`.
pub fn resolve_gangs(ctx: &Context) -> Result<Vec<GangDef>, AnalysisError> {
    if ctx.opts.gang_specs.is_empty() {
        Ok(automatic_gangs(ctx.trace, ctx.timeline))
    } else {
        ctx.opts
            .gang_specs
            .iter()
            .map(|s| explicit_gang(ctx.trace, ctx.timeline, s))
            .collect()
    }
}

fn automatic_gangs(trace: &Trace, timeline: &Timeline) -> Vec<GangDef> {
    let vcpus = vcpu_threads(trace);
    let tgid_of = |tid: Tid| -> Option<Tid> {
        timeline
            .thread(tid)
            .and_then(|t| t.tgid)
            .or_else(|| trace.tasks.tgid(tid))
    };
    let mut vms: BTreeMap<Tid, Vec<Tid>> = BTreeMap::new();
    for &tid in vcpus.keys() {
        if let Some(tgid) = tgid_of(tid) {
            vms.entry(tgid).or_default().push(tid);
        }
    }
    let mut procs: BTreeMap<Tid, Vec<Tid>> = BTreeMap::new();
    for t in &timeline.threads {
        let Some(tgid) = t.tgid.filter(|g| g.0 > 0) else {
            continue;
        };
        if vms.contains_key(&tgid) || t.tid.is_idle() || !ran_or_waited(t) {
            continue;
        }
        procs.entry(tgid).or_default().push(t.tid);
    }
    let mut out = Vec::new();
    for (tgid, mut members) in vms {
        members.sort();
        let vc = members
            .iter()
            .map(|t| vcpus.get(t).copied().flatten())
            .collect();
        out.push(GangDef {
            name: format!("VM {} ({})", tgid, process_name(trace, timeline, tgid)),
            kind: GangKind::Vm,
            tgid: Some(tgid),
            members,
            vcpus: vc,
        });
    }
    for (tgid, mut members) in procs {
        if members.len() < 2 {
            continue;
        }
        members.sort();
        out.push(GangDef {
            name: format!("process {} ({})", tgid, process_name(trace, timeline, tgid)),
            kind: GangKind::Process,
            tgid: Some(tgid),
            members,
            vcpus: Vec::new(),
        });
    }
    out
}

fn invalid(spec: &str, detail: impl Into<String>) -> AnalysisError {
    AnalysisError::InvalidOption {
        option: format!("--gang-of {spec}"),
        detail: detail.into(),
    }
}

/// One `--gang-of` spec, parsed (its syntax checked) but not yet resolved
/// against a trace: front ends check specs with [`GangSpec::parse`] before
/// loading (a usage error), [`explicit_gang`] resolves them.
#[derive(Clone, Debug)]
pub enum GangSpec {
    /// `pid=N`: the threads of process N that ran or waited.
    Pid(i32),
    /// `tids=A,B,C`: these threads (ascending, no repeats; the list as given
    /// names the gang).
    Tids(Vec<i32>, String),
    /// `comm=REGEX`: the threads whose comm matches.
    Comm(regex::Regex),
    /// `cgroup=PATH`: the threads at or below this cgroup that ran.
    Cgroup(String),
}

impl GangSpec {
    /// Check the syntax of `spec` (`pid=N`, `tids=A,B,C`, `comm=REGEX`,
    /// `cgroup=PATH`); the error is [`AnalysisError::InvalidOption`] naming
    /// the option.
    pub fn parse(spec: &str) -> Result<GangSpec, AnalysisError> {
        let (key, value) = spec.split_once('=').ok_or_else(|| {
            invalid(
                spec,
                "expected pid=N, tids=A,B,C, comm=REGEX or cgroup=PATH",
            )
        })?;
        match key.trim() {
            "pid" => value
                .trim()
                .parse()
                .map(GangSpec::Pid)
                .map_err(|_| invalid(spec, format!("`{value}` is not a process id"))),
            "tids" => {
                let mut tids = Vec::new();
                for part in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let tid: i32 = part
                        .parse()
                        .map_err(|_| invalid(spec, format!("`{part}` is not a thread id")))?;
                    tids.push(tid);
                }
                if tids.is_empty() {
                    return Err(invalid(spec, "no thread ids given"));
                }
                Ok(GangSpec::Tids(tids, value.to_string()))
            }
            "comm" => regex::Regex::new(value)
                .map(GangSpec::Comm)
                .map_err(|e| invalid(spec, format!("bad regular expression: {e}"))),
            "cgroup" => Ok(GangSpec::Cgroup(value.trim().to_string())),
            other => Err(invalid(
                spec,
                format!("unknown key `{other}`; expected pid, tids, comm or cgroup"),
            )),
        }
    }
}

/// Parse one `--gang-of` spec and resolve it against the trace.
pub fn explicit_gang(
    trace: &Trace,
    timeline: &Timeline,
    spec: &str,
) -> Result<GangDef, AnalysisError> {
    let parsed = GangSpec::parse(spec)?;
    let vcpus = vcpu_threads(trace);
    let vcpu_list = |members: &[Tid]| -> Vec<Option<u32>> {
        if members.iter().any(|t| vcpus.contains_key(t)) {
            members
                .iter()
                .map(|t| vcpus.get(t).copied().flatten())
                .collect()
        } else {
            Vec::new()
        }
    };
    match parsed {
        GangSpec::Pid(pid) => {
            let tgid = Tid(pid);
            let mut members: Vec<Tid> = timeline
                .threads
                .iter()
                .filter(|t| t.tgid == Some(tgid) && ran_or_waited(t))
                .map(|t| t.tid)
                .collect();
            if members.is_empty() {
                let known = timeline.threads.iter().any(|t| t.tgid == Some(tgid));
                return Err(invalid(
                    spec,
                    if known {
                        format!("no thread of process {pid} ran or waited for a CPU in the trace")
                    } else if timeline.threads.iter().all(|t| t.tgid.is_none()) {
                        format!("the trace has no process (tgid) information, so pid {pid} cannot be resolved; use tids=")
                    } else {
                        format!("process {pid} does not appear in the trace")
                    },
                ));
            }
            members.sort();
            let vc = vcpu_list(&members);
            Ok(GangDef {
                name: format!("process {} ({})", pid, process_name(trace, timeline, tgid)),
                kind: if vc.is_empty() {
                    GangKind::Process
                } else {
                    GangKind::Vm
                },
                tgid: Some(tgid),
                members,
                vcpus: vc,
            })
        }
        GangSpec::Tids(tids, value) => {
            let mut members = Vec::new();
            for tid in tids {
                if timeline.thread(Tid(tid)).is_none() {
                    return Err(invalid(
                        spec,
                        format!("thread {tid} does not appear in the trace"),
                    ));
                }
                members.push(Tid(tid));
            }
            members.sort();
            members.dedup();
            let vc = vcpu_list(&members);
            Ok(GangDef {
                name: format!("tids {value}"),
                kind: GangKind::Explicit,
                tgid: None,
                members,
                vcpus: vc,
            })
        }
        GangSpec::Comm(re) => {
            let mut members: Vec<Tid> = timeline
                .threads
                .iter()
                .filter(|t| re.is_match(&t.comm))
                .map(|t| t.tid)
                .collect();
            if members.is_empty() {
                return Err(invalid(
                    spec,
                    format!("no thread's comm matches `{}`", re.as_str()),
                ));
            }
            members.sort();
            let vc = vcpu_list(&members);
            Ok(GangDef {
                name: format!("comm ~ {}", re.as_str()),
                kind: GangKind::Explicit,
                tgid: None,
                members,
                vcpus: vc,
            })
        }
        GangSpec::Cgroup(path) => {
            let members = cgroup_members(trace, timeline, spec, &path)?;
            let vc = vcpu_list(&members);
            Ok(GangDef {
                name: format!("cgroup {}", normalize_cgroup(&path)),
                kind: GangKind::Explicit,
                tgid: None,
                members,
                vcpus: vc,
            })
        }
    }
}

/// `PATH` with one leading `/` and no trailing one (`/` stays `/`).
fn normalize_cgroup(path: &str) -> String {
    let p = path.trim_matches('/');
    format!("/{p}")
}

/// Whether cgroup `cg` is `root` or below it.
fn cgroup_within(cg: &str, root: &str) -> bool {
    root == "/"
        || cg == root
        || cg
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The threads (by tid) whose recorded cgroup ([`schedscope_trace::Task::cgroup`])
/// is `path` or below it and that ran, sorted.
fn cgroup_members(
    trace: &Trace,
    timeline: &Timeline,
    spec: &str,
    path: &str,
) -> Result<Vec<Tid>, AnalysisError> {
    let root = normalize_cgroup(path);
    let mut known: BTreeMap<&str, usize> = BTreeMap::new();
    let mut inside: HashSet<Tid> = HashSet::new();
    for t in trace.tasks.iter() {
        let Some(cg) = t.cgroup.as_deref() else {
            continue;
        };
        *known.entry(cg).or_default() += 1;
        if cgroup_within(cg, &root) {
            inside.insert(t.tid);
        }
    }
    if known.is_empty() {
        return Err(invalid(
            spec,
            format!(
                "the trace never saw cgroup {root}: it has no task cgroup membership \
                 (which thread is in which cgroup); record with `schedscope record` \
                 (it stores each thread's cgroup in the file), or use pid=, tids= or comm="
            ),
        ));
    }
    if inside.is_empty() {
        let mut by_count: Vec<(&str, usize)> = known.into_iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let list: Vec<String> = by_count
            .iter()
            .take(8)
            .map(|(p, n)| format!("{p} ({n} threads)"))
            .collect();
        return Err(invalid(
            spec,
            format!(
                "no thread of the trace is in cgroup {root} or below it; the trace has {} cgroups, e.g. {}",
                by_count.len(),
                list.join(", ")
            ),
        ));
    }
    let mut members: Vec<Tid> = timeline
        .threads
        .iter()
        .filter(|t| inside.contains(&t.tid))
        .filter(|t| {
            t.intervals
                .iter()
                .any(|iv| matches!(iv.state, ThreadState::Running))
        })
        .map(|t| t.tid)
        .collect();
    members.sort();
    members.dedup();
    if members.is_empty() {
        return Err(invalid(
            spec,
            format!(
                "none of the {} threads in cgroup {root} ran during the trace",
                inside.len()
            ),
        ));
    }
    Ok(members)
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

fn sweep(
    def: &GangDef,
    timeline: &Timeline,
    trace: &Trace,
    mut out: Option<&mut Vec<GangInterval>>,
) -> Gang {
    let n = def.members.len();
    // Transitions (ts, member, class), from the members' contiguous intervals.
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

    let mut state = vec![Cls::Gone; n];
    let (mut running, mut active, mut alive) = (0usize, 0usize, 0usize);
    let mut running_set: Vec<usize> = Vec::new();
    let mut hist = vec![0u64; n + 1];
    let mut both = vec![0u64; n * n];
    let mut member_run = vec![0u64; n];
    let (mut any, mut all, mut frag) = (0u64, 0u64, 0u64);
    // Current fragmented episode: start and who waited.
    let mut ep: Option<(Ts, Vec<bool>)> = None;
    // Min-heap of (duration, earlier start wins ties, who waited).
    type Kept = Reverse<(u64, Reverse<u64>, Vec<Tid>)>;
    let mut heap: BinaryHeap<Kept> = BinaryHeap::new();
    let mut close_episode = |ep: &mut Option<(Ts, Vec<bool>)>, at: Ts| {
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
    };

    let mut prev = tr.first().map(|t| t.0).unwrap_or(timeline.start);
    let mut i = 0;
    let end = timeline.end;
    while i <= tr.len() {
        let ts = if i < tr.len() { tr[i].0 } else { end.max(prev) };
        // Account [prev, ts) with the current counts.
        let dur = ts.0.saturating_sub(prev.0);
        if let (Some(o), true) = (out.as_deref_mut(), dur > 0) {
            let (r, a, l) = (running as u32, active as u32, alive as u32);
            match o.last_mut() {
                Some(g) if g.end_ns == prev.0 && (g.running, g.active, g.alive) == (r, a, l) => {
                    g.end_ns = ts.0
                }
                _ => o.push(GangInterval {
                    start_ns: prev.0,
                    end_ns: ts.0,
                    running: r,
                    active: a,
                    alive: l,
                }),
            }
        }
        if dur > 0 {
            hist[running] += dur;
            if running >= 1 {
                any += dur;
                if running == alive {
                    all += dur;
                }
                if running < active {
                    frag += dur;
                }
                for (a, &x) in running_set.iter().enumerate() {
                    member_run[x] += dur;
                    for &y in &running_set[a + 1..] {
                        let (lo, hi) = if x < y { (x, y) } else { (y, x) };
                        both[lo * n + hi] += dur;
                    }
                }
            }
        }
        if i == tr.len() {
            close_episode(&mut ep, ts);
            break;
        }
        // Apply every transition at ts.
        while i < tr.len() && tr[i].0 == ts {
            let (_, m, c) = tr[i];
            let m = m as usize;
            let old = state[m];
            if old != c {
                match old {
                    Cls::Running => {
                        running -= 1;
                        active -= 1;
                        alive -= 1;
                        if let Some(p) = running_set.iter().position(|&x| x == m) {
                            running_set.swap_remove(p);
                        }
                    }
                    Cls::Runnable => {
                        active -= 1;
                        alive -= 1;
                    }
                    Cls::Idle => alive -= 1,
                    Cls::Gone => {}
                }
                match c {
                    Cls::Running => {
                        running += 1;
                        active += 1;
                        alive += 1;
                        running_set.push(m);
                    }
                    Cls::Runnable => {
                        active += 1;
                        alive += 1;
                    }
                    Cls::Idle => alive += 1,
                    Cls::Gone => {}
                }
                state[m] = c;
            }
            i += 1;
        }
        // Episode bookkeeping after the changes at ts.
        let fragmented = running >= 1 && running < active;
        if fragmented {
            let e = ep.get_or_insert_with(|| (ts, vec![false; n]));
            for (m, s) in state.iter().enumerate() {
                if *s == Cls::Runnable {
                    e.1[m] = true;
                }
            }
        } else {
            close_episode(&mut ep, ts);
        }
        prev = ts;
    }

    let mut episodes: Vec<Episode> = heap
        .into_iter()
        .map(|Reverse((d, Reverse(s), who))| Episode {
            start_ns: s,
            duration_ns: d,
            waiting: who,
        })
        .collect();
    episodes.sort_by_key(|e| (Reverse(e.duration_ns), e.start_ns));

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
        corun_ratio: ratio(all, any),
        fragmented_ns: frag,
        fragmented_ratio: ratio(frag, any),
        running_hist_ns: hist,
        pair_corun: pair,
        any_running_ns: any,
        all_running_ns: all,
        member_running_ns: member_run,
        episodes,
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
    let gangs: Vec<Gang> = defs
        .par_iter()
        .map(|d| compute(d, ctx.timeline, ctx.trace))
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

/// Members of `defs` by tid: (gang index, member index); first gang wins.
pub(crate) fn member_index(defs: &[GangDef]) -> HashMap<Tid, (usize, usize)> {
    let mut m = HashMap::new();
    for (g, d) in defs.iter().enumerate() {
        for (i, t) in d.members.iter().enumerate() {
            m.entry(*t).or_insert((g, i));
        }
    }
    m
}

#[cfg(test)]
mod cgroup_spec_tests {
    use super::*;
    use schedscope_trace::{Cpu, Event, PrevState, StackId, TraceFormat};

    /// CPU0 runs 1, 2, 3, 4 in turn (1 ms each); task 5 never runs. Members
    /// by construction: 1, 2 in /L1/C1, 3 in /L1/C1/sub, 4 in /L10 (a
    /// sibling whose name starts like /L1), 5 in /L1/C1 but idle.
    fn trace(with_membership: bool) -> Trace {
        let mut t = Trace::new("gen", TraceFormat::PerfData);
        let name = t.intern_name("sched:sched_switch");
        let c = t.strings.intern("x");
        let order = [0, 1, 2, 3, 4, 0];
        for (i, w) in order.windows(2).enumerate() {
            t.events.push(Event {
                ts: Ts(1_000_000 * (i as u64 + 1)),
                cpu: Cpu(0),
                tid: Tid(w[0]),
                name,
                stack: StackId::NONE,
                data: EventData::Switch {
                    prev_tid: Tid(w[0]),
                    prev_prio: 120,
                    prev_state: PrevState::parse_text("S").expect("valid state"),
                    prev_comm: c,
                    next_tid: Tid(w[1]),
                    next_prio: 120,
                    next_comm: c,
                },
            });
        }
        *t.events_by_name
            .entry("sched:sched_switch".into())
            .or_default() += order.len() as u64 - 1;
        for (tid, cg) in [
            (1, "/L1/C1"),
            (2, "/L1/C1"),
            (3, "/L1/C1/sub"),
            (4, "/L10"),
            (5, "/L1/C1"),
        ] {
            t.tasks.fork(Tid(tid), Some(Tid(tid)), "x", None);
            if with_membership {
                t.tasks.get_or_insert(Tid(tid)).cgroup = Some(cg.into());
            }
        }
        t.finish();
        t
    }

    fn option_error(e: AnalysisError) -> String {
        match e {
            AnalysisError::InvalidOption { option, detail } => format!("{option}: {detail}"),
            other => panic!("expected InvalidOption, got {other:?}"),
        }
    }

    #[test]
    fn cgroup_gang_is_the_threads_at_or_below_the_path_that_ran() {
        let t = trace(true);
        let tl = Timeline::build(&t);
        let g = explicit_gang(&t, &tl, "cgroup=/L1/C1/").expect("gang");
        assert_eq!(g.members, vec![Tid(1), Tid(2), Tid(3)]);
        assert_eq!(g.name, "cgroup /L1/C1");
        let g = explicit_gang(&t, &tl, "cgroup=L1").expect("gang");
        assert_eq!(
            g.members,
            vec![Tid(1), Tid(2), Tid(3)],
            "/L10 is not below /L1"
        );
        let g = explicit_gang(&t, &tl, "cgroup=/").expect("gang");
        assert_eq!(g.members, vec![Tid(1), Tid(2), Tid(3), Tid(4)]);
    }

    #[test]
    fn cgroup_gang_errors_name_the_option_and_say_what_to_do() {
        let t = trace(true);
        let tl = Timeline::build(&t);
        let e = option_error(explicit_gang(&t, &tl, "cgroup=/nope").unwrap_err());
        assert!(e.starts_with("--gang-of cgroup=/nope"), "{e}");
        assert!(
            e.contains("/L1/C1 (3 threads)") && e.contains("/L10 (1 threads)"),
            "{e}"
        );
        let t = trace(false);
        let tl = Timeline::build(&t);
        let e = option_error(explicit_gang(&t, &tl, "cgroup=/L1/C1").unwrap_err());
        assert!(
            e.contains("no task cgroup membership") && e.contains("schedscope record"),
            "{e}"
        );
    }
}
