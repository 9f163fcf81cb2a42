//! Group discovery: which threads form a gang, for `gang` and `lhp`.
//!
//! Automatic groups are every process (tgid) with two or more threads that
//! were Running or Runnable, and every VM (the threads of one tgid that
//! emitted kvm_exit / kvm_entry; a VM's group holds only its vCPU threads);
//! explicit ones come from `--gang-of` specs ([`GangSpec`]: `pid=N`,
//! `tids=A,B,C`, `comm=REGEX`, `cgroup=PATH`), checked for syntax alone
//! before loading and resolved here against the trace and timeline.

use crate::timeline::{ThreadState, Timeline};
use crate::{AnalysisError, Context};
use schedscope_trace::{Tid, Trace};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// The events every gang computation needs: sched_switch and a wakeup
/// event (either; sched_waking improves the result, see
/// [`crate::error::WAKEUP_NOTE`]).
pub(crate) fn check_sched_events(trace: &Trace, analysis: &str) -> Result<(), AnalysisError> {
    let (mut missing, mut improves) = (Vec::new(), Vec::new());
    if trace.count("sched:sched_switch") == 0 {
        missing.push("sched:sched_switch");
    }
    crate::error::wakeup_needs(
        trace.count("sched:sched_wakeup") > 0,
        trace.count("sched:sched_waking") > 0,
        &mut missing,
        &mut improves,
    );
    if missing.is_empty() {
        Ok(())
    } else {
        Err(AnalysisError::missing_improves(
            analysis, &missing, &improves,
        ))
    }
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
    let vcpus = &timeline.vcpus;
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
    let vcpus = &timeline.vcpus;
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

/// The gangs whose pause-loop exits lhp classifies: with `--gang-of`, the
/// explicit gangs; otherwise one gang per VM, and each vCPU thread without
/// a tgid a gang of its own.
pub(crate) fn vm_gangs(ctx: &Context) -> Result<Vec<GangDef>, AnalysisError> {
    if !ctx.opts.gang_specs.is_empty() {
        return resolve_gangs(ctx);
    }
    let mut d: Vec<GangDef> = resolve_gangs(ctx)?
        .into_iter()
        .filter(|g| g.kind == GangKind::Vm)
        .collect();
    let grouped = member_index(&d);
    for (&tid, &vcpu) in &ctx.timeline.vcpus {
        if !grouped.contains_key(&tid) {
            d.push(GangDef {
                name: format!("vCPU thread {tid} (no tgid)"),
                kind: GangKind::Vm,
                tgid: None,
                members: vec![tid],
                vcpus: vec![vcpu],
            });
        }
    }
    Ok(d)
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
    use schedscope_trace::{Cpu, Event, EventData, PrevState, StackId, TraceFormat, Ts};

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

    #[test]
    fn specs_parse_without_a_trace_and_resolve_against_one() {
        match GangSpec::parse(" pid = 42").expect("pid") {
            GangSpec::Pid(42) => {}
            other => panic!("{other:?}"),
        }
        match GangSpec::parse("tids=3, 1,,2").expect("tids") {
            GangSpec::Tids(t, v) => assert_eq!((t, v.as_str()), (vec![3, 1, 2], "3, 1,,2")),
            other => panic!("{other:?}"),
        }
        match GangSpec::parse("comm=^spin-[0-9]+$").expect("comm") {
            GangSpec::Comm(re) => assert!(re.is_match("spin-12") && !re.is_match("x")),
            other => panic!("{other:?}"),
        }
        match GangSpec::parse("cgroup= /L1/C1/ ").expect("cgroup") {
            GangSpec::Cgroup(p) => assert_eq!(p, "/L1/C1/"),
            other => panic!("{other:?}"),
        }
        for (bad, why) in [
            ("pid=x", "`x` is not a process id"),
            ("tids=1,y", "`y` is not a thread id"),
            ("tids= , ", "no thread ids given"),
            ("comm=(", "bad regular expression"),
            ("uid=0", "unknown key `uid`"),
            ("comm", "expected pid=N"),
        ] {
            let e = option_error(GangSpec::parse(bad).expect_err(bad));
            assert!(
                e.starts_with(&format!("--gang-of {bad}: ")) && e.contains(why),
                "{e}"
            );
        }
        // The same spec resolved: tids are sorted and checked against the trace.
        let t = trace(true);
        let tl = Timeline::build(&t);
        let g = explicit_gang(&t, &tl, "tids=3,1,2,1").expect("gang");
        assert_eq!(g.members, vec![Tid(1), Tid(2), Tid(3)]);
        assert_eq!(g.name, "tids 3,1,2,1");
        let e = option_error(explicit_gang(&t, &tl, "tids=1,77").unwrap_err());
        assert!(e.contains("thread 77 does not appear in the trace"), "{e}");
    }
}
