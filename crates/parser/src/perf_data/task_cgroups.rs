//! The schedscope task-cgroup feature section (bit
//! [`abi::feature::SCHEDSCOPE_TASK_CGROUPS`](super::abi::feature::SCHEDSCOPE_TASK_CGROUPS),
//! layout and decoder in [`schedscope_perf_data::sections`]): each thread's
//! CPU-controller cgroup at record start and at record end. [`apply`] sets
//! [`schedscope_trace::Task::cgroup`] from it.

use schedscope_perf_data::sections::{decode_task_cgroups, TaskCgroup};
use schedscope_trace::{Event, EventData, Severity, Tid, Trace};
use std::collections::HashMap;

/// Read the section when the file has one and apply it to `trace` (a
/// damaged section becomes a data-loss warning that names its offset);
/// `forks`: the trace's process fork events in time order (the loaded
/// events, or what a stream kept of them).
pub fn load(trace: &mut Trace, section: Option<(&[u8], u64)>, forks: &[Event]) {
    if let Some((b, off)) = section {
        match decode_task_cgroups(b, off) {
            Ok(entries) => {
                apply(trace, &entries, forks);
            }
            Err(e) => trace.warn(Severity::DataLoss, e.to_string(), 1),
        }
    }
}

/// Set `Task::cgroup` from the entries, for the task tables' latest
/// incarnation of each tid that was alive when the entry was read (the
/// earliest such entry wins). Threads without an entry (born and dead
/// during the recording) then inherit their parent's cgroup, in time order,
/// through the sched_process_fork events among `forks`; a thread that still has none and
/// whose process (tgid) has one takes its process's (new threads are created
/// by a thread of the same process). Returns how many tasks got a cgroup.
pub fn apply(trace: &mut Trace, entries: &[TaskCgroup], forks: &[Event]) -> usize {
    let mut by_tid: HashMap<i32, Vec<&TaskCgroup>> = HashMap::new();
    for e in entries {
        by_tid.entry(e.tid).or_default().push(e);
    }
    let mut set = 0usize;
    let mut tids: Vec<i32> = by_tid.keys().copied().collect();
    tids.sort_unstable();
    for tid in tids {
        let Some(v) = by_tid.get_mut(&tid) else {
            continue;
        };
        v.sort_by_key(|e| e.ts);
        let Some(task) = trace.tasks.by_tid(Tid(tid)) else {
            continue;
        };
        let alive = |ts: u64| {
            task.fork_ts.is_none_or(|f| f.0 <= ts) && task.exit_ts.is_none_or(|x| x.0 >= ts)
        };
        if let Some(e) = v.iter().find(|e| alive(e.ts)) {
            trace.tasks.get_or_insert(Tid(tid)).cgroup = Some(e.path.clone());
            set += 1;
        }
    }
    if set == 0 {
        return 0;
    }
    for ev in forks {
        let EventData::Fork {
            parent_tid,
            child_tid,
            ..
        } = ev.data
        else {
            continue;
        };
        if trace
            .tasks
            .by_tid(child_tid)
            .is_none_or(|t| t.cgroup.is_some())
        {
            continue;
        }
        if let Some(cg) = trace
            .tasks
            .by_tid(parent_tid)
            .and_then(|t| t.cgroup.clone())
        {
            trace.tasks.get_or_insert(child_tid).cgroup = Some(cg);
            set += 1;
        }
    }
    let orphans: Vec<(Tid, String)> = trace
        .tasks
        .iter()
        .filter(|t| t.cgroup.is_none())
        .filter_map(|t| {
            let tgid = t.tgid.filter(|g| *g != t.tid && g.0 > 0)?;
            let latest = trace.tasks.by_tid(t.tid)?;
            let cg = trace.tasks.by_tid(tgid)?.cgroup.clone()?;
            (latest.utid == t.utid).then_some((t.tid, cg))
        })
        .collect();
    for (tid, cg) in orphans {
        trace.tasks.get_or_insert(tid).cgroup = Some(cg);
        set += 1;
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{Cpu, Event, StackId, TraceFormat, Ts};

    fn entry(tid: i32, pid: i32, ts: u64, path: &str) -> TaskCgroup {
        TaskCgroup {
            tid,
            pid,
            ts,
            path: path.into(),
        }
    }

    #[test]
    fn entries_set_live_tasks_and_forks_inherit() {
        let mut t = Trace::new("t", TraceFormat::PerfData);
        // 10 alive at start; 11 forked by 10 at 50 and dead at 60 (no entry);
        // 12 a thread of 10 created without a fork event (no entry);
        // 13 alive at start and end but moved between the snapshots.
        t.tasks.fork(Tid(10), Some(Tid(10)), "a", None);
        t.tasks.fork(Tid(13), Some(Tid(13)), "d", None);
        t.tasks.fork(Tid(11), Some(Tid(11)), "b", Some(Ts(50)));
        t.tasks.exit(Tid(11), Ts(60));
        t.tasks.fork(Tid(12), Some(Tid(10)), "c", Some(Ts(70)));
        // 14: a later incarnation born after the start entry of its tid.
        t.tasks.fork(Tid(14), Some(Tid(14)), "e", None);
        t.tasks.exit(Tid(14), Ts(20));
        t.tasks.fork(Tid(14), Some(Tid(14)), "e2", Some(Ts(30)));
        let comm = t.strings.intern("b");
        let name = t.intern_name("sched:sched_process_fork");
        t.events.push(Event {
            ts: Ts(50),
            cpu: Cpu(0),
            tid: Tid(10),
            name,
            stack: StackId::NONE,
            data: EventData::Fork {
                parent_tid: Tid(10),
                child_tid: Tid(11),
                child_comm: comm,
            },
        });
        let es = [
            entry(10, 10, 1, "/L1/C1"),
            entry(13, 13, 1, "/first"),
            entry(13, 13, 100, "/second"),
            entry(14, 14, 1, "/old"),
            entry(10, 10, 100, "/L1/C1"),
        ];
        let forks = t.events.clone();
        let n = apply(&mut t, &es, &forks);
        let cg = |tid: i32| t.tasks.by_tid(Tid(tid)).and_then(|x| x.cgroup.clone());
        assert_eq!(cg(10).as_deref(), Some("/L1/C1"));
        assert_eq!(cg(11).as_deref(), Some("/L1/C1"), "inherited via fork");
        assert_eq!(
            cg(12).as_deref(),
            Some("/L1/C1"),
            "inherited from its process"
        );
        assert_eq!(cg(13).as_deref(), Some("/first"), "earliest entry wins");
        assert_eq!(cg(14), None, "the entry was for the previous incarnation");
        assert_eq!(n, 4);
    }

    #[test]
    fn task_cgroups_round_trip_through_the_writer_and_decoder() {
        use schedscope_perf_data::sections::encode_task_cgroups;
        use schedscope_perf_data::{abi, AttrSpec, EventAttr, Features, PerfDataWriter};
        let spec = AttrSpec {
            attr: EventAttr::tracepoint(300),
            name: "test:ev".into(),
            ids: vec![10],
        };
        let mut w = PerfDataWriter::new(std::io::Cursor::new(Vec::new()), vec![spec]).unwrap();
        // 100 (process) and 101 (its thread) alive at start; 102 a thread
        // of 100 created during the recording (PERF_RECORD_FORK, no entry).
        w.fork(100, 1, 100, 1, 0).unwrap();
        w.comm(100, 100, "burn", 0).unwrap();
        w.fork(100, 100, 101, 100, 0).unwrap();
        w.comm(100, 101, "burn", 0).unwrap();
        w.fork(100, 100, 102, 101, 500).unwrap();
        w.comm(100, 102, "burn", 500).unwrap();
        w.finished_round().unwrap();
        let entries = [
            entry(100, 100, 1, "/L1/L2/C1"),
            entry(101, 100, 1, "/L1/L2/C1"),
        ];
        let feats = Features {
            extra: vec![(
                abi::feature::SCHEDSCOPE_TASK_CGROUPS,
                encode_task_cgroups(&entries),
            )],
            ..Features::default()
        };
        let (cur, _) = w.finish(&feats).unwrap();
        let trace = crate::perf_data::decode("rt", cur.get_ref()).unwrap();
        for tid in [100, 101, 102] {
            let t = trace
                .tasks
                .by_tid(Tid(tid))
                .unwrap_or_else(|| panic!("task {tid} decoded"));
            assert_eq!(t.cgroup.as_deref(), Some("/L1/L2/C1"), "tid {tid}");
        }
        assert!(
            !trace.warnings.iter().any(|w| w.message.contains("cgroup")),
            "{:?}",
            trace.warnings
        );
    }

    #[test]
    fn a_damaged_section_is_a_warning_that_names_its_offset() {
        let mut t = Trace::new("t", TraceFormat::PerfData);
        load(&mut t, Some((&[1, 0, 0, 0, 5, 0, 0, 0, 1], 4096)), &[]);
        assert!(
            t.warnings
                .iter()
                .any(|w| w.message.contains("task-cgroup") && w.message.contains("4096")),
            "{:?}",
            t.warnings
        );
    }
}
