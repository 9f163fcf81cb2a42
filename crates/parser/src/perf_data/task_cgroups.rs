//! The schedscope task-cgroup feature section (bit
//! [`abi::feature::SCHEDSCOPE_TASK_CGROUPS`](super::abi::feature::SCHEDSCOPE_TASK_CGROUPS),
//! layout documented in the collector's `cgroup` module): each thread's
//! CPU-controller cgroup at record start and at record end. [`apply`] sets
//! [`schedscope_trace::Task::cgroup`] from it.

use super::bytes::{self, Cursor};
use schedscope_trace::{EventData, Severity, Tid, Trace};
use std::collections::HashMap;

/// One entry: thread `tid` of process `pid` was in `path` at `ts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Thread id.
    pub tid: i32,
    /// Thread-group id.
    pub pid: i32,
    /// When it was read (the events' clock).
    pub ts: u64,
    /// cgroup path, e.g. `/L1/L2/C1`.
    pub path: String,
}

/// Parse the section (version 1); `base` is its file offset, for messages.
pub fn parse(b: &[u8], base: u64) -> Result<Vec<Entry>, String> {
    let mut c = Cursor::new(b, base);
    let err = |c: &Cursor<'_>, what: &str| {
        format!(
            "schedscope task-cgroup section (byte offset {base}): {what} at byte offset {}",
            c.offset()
        )
    };
    let version = c.u32().ok_or_else(|| err(&c, "truncated version"))?;
    if version != 1 {
        return Err(err(&c, &format!("unsupported version {version}")));
    }
    let count = c.u32().ok_or_else(|| err(&c, "truncated count"))?;
    let mut out = Vec::with_capacity((count as usize).min(c.remaining() / 24));
    for _ in 0..count {
        let rec = (|| {
            let tid = c.u32()? as i32;
            let pid = c.u32()? as i32;
            let ts = c.u64()?;
            let len = c.u32()? as usize;
            let path = c.bytes(len)?;
            let consumed = 4 + 4 + 8 + 4 + len;
            c.bytes((8 - consumed % 8) % 8)?;
            Some(Entry {
                tid,
                pid,
                ts,
                path: String::from_utf8_lossy(bytes::until_nul(path)).into_owned(),
            })
        })();
        match rec {
            Some(r) => out.push(r),
            None => return Err(err(&c, "truncated entry")),
        }
    }
    Ok(out)
}

/// Read the section when the file has one and apply it to `trace` (a
/// damaged section becomes a data-loss warning that names its offset).
pub fn load(trace: &mut Trace, section: Option<(&[u8], u64)>) {
    if let Some((b, off)) = section {
        match parse(b, off) {
            Ok(entries) => {
                apply(trace, &entries);
            }
            Err(e) => trace.warn(Severity::DataLoss, e, 1),
        }
    }
}

/// Set `Task::cgroup` from the entries, for the task tables' latest
/// incarnation of each tid that was alive when the entry was read (the
/// earliest such entry wins). Threads without an entry (born and dead
/// during the recording) then inherit their parent's cgroup, in time order,
/// through the sched_process_fork events; a thread that still has none and
/// whose process (tgid) has one takes its process's (new threads are created
/// by a thread of the same process). Returns how many tasks got a cgroup.
pub fn apply(trace: &mut Trace, entries: &[Entry]) -> usize {
    let mut by_tid: HashMap<i32, Vec<&Entry>> = HashMap::new();
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
    for i in 0..trace.events.len() {
        let EventData::Fork {
            parent_tid,
            child_tid,
            ..
        } = trace.events[i].data
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

    fn encode(entries: &[Entry]) -> Vec<u8> {
        // Written by hand from the documented layout (the collector has the
        // production encoder; its test round-trips through the decoder).
        let mut b = Vec::new();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for e in entries {
            b.extend_from_slice(&e.tid.to_le_bytes());
            b.extend_from_slice(&e.pid.to_le_bytes());
            b.extend_from_slice(&e.ts.to_le_bytes());
            b.extend_from_slice(&(e.path.len() as u32).to_le_bytes());
            b.extend_from_slice(e.path.as_bytes());
            while b.len() % 8 != 0 {
                b.push(0);
            }
        }
        b
    }

    fn entry(tid: i32, pid: i32, ts: u64, path: &str) -> Entry {
        Entry {
            tid,
            pid,
            ts,
            path: path.into(),
        }
    }

    #[test]
    fn section_round_trips_and_truncation_names_the_offset() {
        let es = vec![entry(5, 5, 10, "/L1/L2/C1"), entry(6, 5, 99, "/")];
        let b = encode(&es);
        assert_eq!(parse(&b, 0).unwrap(), es);
        let e = parse(&b[..b.len() - 3], 4096).unwrap_err();
        assert!(
            e.contains("byte offset 4096") && e.contains("truncated"),
            "{e}"
        );
        let mut v2 = b.clone();
        v2[0] = 2;
        assert!(parse(&v2, 0).unwrap_err().contains("version 2"));
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
        let n = apply(&mut t, &es);
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
}
