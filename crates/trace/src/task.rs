//! The task table: what is known about each thread (tgid, comm, lifetime).
//!
//! Kernel tids are reused, so each incarnation of a tid gets its own [`Utid`].
//! A tid's incarnation ends at its exit; the next fork of the same tid starts a
//! new one. Lookups by tid return the latest incarnation, which is what a
//! time-ordered pass needs.

use crate::ids::{Tid, Ts, Utid};
use std::collections::HashMap;

/// One thread incarnation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Task {
    /// Trace-unique id (index in the table).
    pub utid: Utid,
    /// Kernel tid.
    pub tid: Tid,
    /// Thread-group id (process id), when known.
    pub tgid: Option<Tid>,
    /// Latest known command name.
    pub comm: String,
    /// When it was forked, if seen.
    pub fork_ts: Option<Ts>,
    /// When it exited, if seen.
    pub exit_ts: Option<Ts>,
    /// Its CPU-controller cgroup path (e.g. `/L1/L2/C1`), when recorded.
    pub cgroup: Option<String>,
}

/// All threads of a trace.
#[derive(Clone, Debug, Default)]
pub struct TaskTable {
    tasks: Vec<Task>,
    by_tid: HashMap<Tid, Utid>,
}

impl TaskTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The latest incarnation of `tid`, creating one if the tid is new.
    pub fn get_or_insert(&mut self, tid: Tid) -> &mut Task {
        let utid = match self.by_tid.get(&tid) {
            Some(&u) => u,
            None => self.push(tid),
        };
        &mut self.tasks[utid.0 as usize]
    }

    fn push(&mut self, tid: Tid) -> Utid {
        let utid = Utid(self.tasks.len() as u32);
        self.tasks.push(Task {
            utid,
            tid,
            ..Task::default()
        });
        self.by_tid.insert(tid, utid);
        utid
    }

    /// Record a fork: a new incarnation of `child` if the previous one exited.
    pub fn fork(&mut self, child: Tid, tgid: Option<Tid>, comm: &str, ts: Option<Ts>) -> Utid {
        let reuse = self.by_tid.get(&child).map(|&u| &self.tasks[u.0 as usize]);
        let utid = match reuse {
            Some(t) if t.exit_ts.is_none() && t.fork_ts.is_none() => t.utid,
            Some(t) if t.exit_ts.is_none() && t.fork_ts == ts => t.utid,
            _ => self.push(child),
        };
        let t = &mut self.tasks[utid.0 as usize];
        if tgid.is_some() {
            t.tgid = tgid;
        }
        if !comm.is_empty() {
            t.comm = comm.to_string();
        }
        if t.fork_ts.is_none() {
            t.fork_ts = ts;
        }
        utid
    }

    /// Set the comm of the latest incarnation of `tid`.
    pub fn set_comm(&mut self, tid: Tid, comm: &str) {
        let t = self.get_or_insert(tid);
        if t.comm != comm {
            t.comm = comm.to_string();
        }
    }

    /// Set the tgid of the latest incarnation of `tid` (ignored if `tgid` is
    /// not positive).
    pub fn set_tgid(&mut self, tid: Tid, tgid: Tid) {
        if tgid.0 > 0 || tid.0 == 0 {
            self.get_or_insert(tid).tgid = Some(tgid);
        }
    }

    /// Record the exit of the latest incarnation of `tid`.
    pub fn exit(&mut self, tid: Tid, ts: Ts) {
        self.get_or_insert(tid).exit_ts = Some(ts);
    }

    /// The latest incarnation of `tid`.
    pub fn by_tid(&self, tid: Tid) -> Option<&Task> {
        self.by_tid.get(&tid).map(|u| &self.tasks[u.0 as usize])
    }

    /// A task by utid.
    pub fn get(&self, utid: Utid) -> Option<&Task> {
        self.tasks.get(utid.0 as usize)
    }

    /// A task by utid, for updating an earlier incarnation of a reused tid.
    pub fn get_mut(&mut self, utid: Utid) -> Option<&mut Task> {
        self.tasks.get_mut(utid.0 as usize)
    }

    /// Thread-group id of `tid` (latest incarnation), if known.
    pub fn tgid(&self, tid: Tid) -> Option<Tid> {
        self.by_tid(tid).and_then(|t| t.tgid)
    }

    /// Comm of `tid` (latest incarnation), or "" if unknown.
    pub fn comm(&self, tid: Tid) -> &str {
        self.by_tid(tid).map(|t| t.comm.as_str()).unwrap_or("")
    }

    /// All incarnations in utid order.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter()
    }

    /// Number of incarnations.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tid_reuse_after_exit_gets_new_utid() {
        let mut t = TaskTable::new();
        let a = t.fork(Tid(10), Some(Tid(10)), "a", Some(Ts(1)));
        t.exit(Tid(10), Ts(5));
        let b = t.fork(Tid(10), Some(Tid(3)), "b", Some(Ts(9)));
        assert_ne!(a, b);
        assert_eq!(t.comm(Tid(10)), "b");
        assert_eq!(t.tgid(Tid(10)), Some(Tid(3)));
        assert_eq!(t.get(a).unwrap().comm, "a");
    }

    #[test]
    fn comm_before_fork_is_same_incarnation() {
        let mut t = TaskTable::new();
        t.set_comm(Tid(7), "x");
        let u = t.fork(Tid(7), Some(Tid(1)), "", None);
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(u).unwrap().comm, "x");
    }
}
