//! Who sends the requests: threads grouped by process (tgid, memoized),
//! the top processes with their busiest threads.

use super::report::{Sender, SenderThread};
use crate::Context;
use schedscope_trace::hash::FxMap;
use schedscope_trace::{TaskTable, Tid};

/// Memoized thread -> tgid lookups (the task table hashes with SipHash).
pub(super) struct Tgids<'a> {
    tasks: &'a TaskTable,
    memo: FxMap<Tid, Option<Tid>>,
}

impl<'a> Tgids<'a> {
    pub(super) fn new(tasks: &'a TaskTable) -> Tgids<'a> {
        Tgids {
            tasks,
            memo: FxMap::default(),
        }
    }
    pub(super) fn tgid(&mut self, tid: Tid) -> Option<Tid> {
        let tasks = self.tasks;
        *self.memo.entry(tid).or_insert_with(|| tasks.tgid(tid))
    }
    /// The process of `tid`: its tgid when known (> 0), else itself.
    pub(super) fn pid_of(&mut self, tid: Tid) -> Option<Tid> {
        self.tgid(tid).filter(|p| p.0 > 0).or(Some(tid))
    }
    /// Whether the tgid of `tid` is known.
    pub(super) fn known(&mut self, tid: Tid) -> bool {
        self.tgid(tid).is_some_and(|p| p.0 > 0)
    }
}

/// The top `rows` sending processes of `by_tid` (requests per thread),
/// names resolved for those rows only.
pub(super) fn senders(
    ctx: &Context,
    tgids: &mut Tgids,
    by_tid: &FxMap<Tid, u64>,
    total: u64,
    rows: usize,
) -> Vec<Sender> {
    let tasks = &ctx.trace.tasks;
    let mut by_pid: FxMap<Tid, Vec<(Tid, u64)>> = FxMap::default();
    for (&tid, &n) in by_tid {
        let pid = tgids.tgid(tid).filter(|p| p.0 > 0).unwrap_or(tid);
        by_pid.entry(pid).or_default().push((tid, n));
    }
    // (pid, requests, its threads with their requests)
    type Proc = (Tid, u64, Vec<(Tid, u64)>);
    let mut procs: Vec<Proc> = by_pid
        .into_iter()
        .map(|(pid, threads)| (pid, threads.iter().map(|t| t.1).sum(), threads))
        .collect();
    procs.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    procs.truncate(rows);
    procs
        .into_iter()
        .map(|(pid, count, mut threads)| {
            threads.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let comm = match tasks.comm(pid) {
                "" => threads
                    .first()
                    .map(|t| tasks.comm(t.0).to_string())
                    .unwrap_or_default(),
                c => c.to_string(),
            };
            Sender {
                pid: pid.0,
                comm,
                count,
                share: if total > 0 {
                    count as f64 / total as f64
                } else {
                    0.0
                },
                threads: threads
                    .iter()
                    .take(10)
                    .map(|&(tid, count)| SenderThread {
                        tid: tid.0,
                        comm: tasks.comm(tid).to_string(),
                        count,
                    })
                    .collect(),
            }
        })
        .collect()
}
