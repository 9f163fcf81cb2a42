//! Cross-run identities: the `match_key` and `match_ordinal` that pair
//! threads, processes, gangs and VMs of different recordings (tids and pids
//! differ from run to run; names do not).

use schedscope_trace::{TaskTable, Tid};
use std::collections::HashMap;

/// A comm as a cross-run name: per-CPU kthread names are kept
/// (`ksoftirqd/1`), the worker number of a per-CPU kworker is collapsed
/// (`kworker/1:2H` -> `kworker/1:*H`), unbound kworkers collapse to
/// `kworker/u*`, and a workqueue suffix (`kworker/0:1-events`) is dropped.
pub fn comm_key(comm: &str) -> String {
    let Some(rest) = comm.strip_prefix("kworker/") else {
        return comm.to_string();
    };
    let rest = rest.split('-').next().unwrap_or(rest);
    if rest.starts_with('u') {
        return "kworker/u*".to_string();
    }
    match rest.split_once(':') {
        Some((cpu, worker)) => {
            let hi = if worker.ends_with('H') { "H" } else { "" };
            format!("kworker/{cpu}:*{hi}")
        }
        None => format!("kworker/{rest}"),
    }
}

/// The comm of a process: its leader's, else that of `fallback`.
pub fn process_comm<'a>(tasks: &'a TaskTable, tgid: Option<Tid>, fallback: &'a str) -> &'a str {
    match tgid.and_then(|g| tasks.by_tid(g)) {
        Some(t) if !t.comm.is_empty() => &t.comm,
        _ => fallback,
    }
}

/// The match key of a thread: `process comm/thread comm`, both through
/// [`comm_key`].
pub fn thread_key(tasks: &TaskTable, tid: Tid, tgid: Option<Tid>, comm: &str) -> String {
    let tgid = tgid.or_else(|| tasks.by_tid(tid).and_then(|t| t.tgid));
    format!(
        "{}/{}",
        comm_key(process_comm(tasks, tgid, comm)),
        comm_key(comm)
    )
}

/// Match keys and ordinals of every thread incarnation, indexed by utid:
/// the ordinal ranks threads with the same key by (fork time, utid).
pub fn thread_keys(tasks: &TaskTable) -> Vec<(String, u32)> {
    let keys: Vec<String> = tasks
        .iter()
        .map(|t| thread_key(tasks, t.tid, t.tgid, &t.comm))
        .collect();
    ordinals(keys, |u| {
        tasks
            .get(schedscope_trace::Utid(u as u32))
            .and_then(|t| t.fork_ts)
            .map_or(0, |ts| ts.0)
    })
}

/// The `--by ordinal` key of every thread of a trace: `match_key#N`, the
/// `thread` table's `match_key` and `match_ordinal` (N ranks the threads
/// with the same key by fork time, then utid).
pub struct ThreadKeys {
    /// Per tid, the key of each incarnation (in utid order).
    by_tid: HashMap<i32, Vec<String>>,
}

impl ThreadKeys {
    /// Keys of every thread incarnation of `tasks`.
    pub fn new(tasks: &TaskTable) -> ThreadKeys {
        let mut by_tid: HashMap<i32, Vec<String>> = HashMap::new();
        for (t, (key, ord)) in tasks.iter().zip(thread_keys(tasks)) {
            by_tid
                .entry(t.tid.0)
                .or_default()
                .push(format!("{key}#{ord}"));
        }
        ThreadKeys { by_tid }
    }

    /// The key of thread `tid` (its first incarnation: analyses that report
    /// per tid merge incarnations), or its comm's key when the task table
    /// does not know it (`comm#0`).
    pub fn key(&self, tid: Tid, comm: &str) -> String {
        match self.by_tid.get(&tid.0).and_then(|v| v.first()) {
            Some(k) => k.clone(),
            None => format!("{}#0", comm_key(comm)),
        }
    }
}

/// Rank equal keys by `start(index)` then index.
pub fn ordinals(keys: Vec<String>, start: impl Fn(usize) -> u64) -> Vec<(String, u32)> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| {
        keys[a]
            .cmp(&keys[b])
            .then(start(a).cmp(&start(b)))
            .then(a.cmp(&b))
    });
    let mut ord = vec![0u32; keys.len()];
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for &i in &order {
        let n = seen.entry(keys[i].as_str()).or_insert(0);
        ord[i] = *n;
        *n += 1;
    }
    keys.into_iter().zip(ord).collect()
}

/// How entities of different runs are paired (`diff --by`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum By {
    /// By name: the process comm (kworkers collapsed, see [`comm_key`]).
    #[default]
    Comm,
    /// By name and start order: `comm#N`, N the rank by first fork among
    /// processes with the same comm.
    Ordinal,
    /// By name and pid (`comm[pid]`), for traces of the same boot.
    Pid,
}

/// The cross-run key of every process of a trace.
pub struct ProcessKeys {
    by_tgid: HashMap<i32, String>,
}

impl ProcessKeys {
    /// Keys of the processes (tgids) of `tasks`, paired `by`.
    pub fn new(tasks: &TaskTable, by: By) -> ProcessKeys {
        let mut starts: HashMap<i32, u64> = HashMap::new();
        for t in tasks.iter() {
            if let Some(g) = t.tgid {
                let s = starts.entry(g.0).or_insert(u64::MAX);
                *s = (*s).min(t.fork_ts.map_or(0, |f| f.0));
            }
        }
        let mut tgids: Vec<i32> = starts.keys().copied().collect();
        tgids.sort_unstable();
        let names: Vec<String> = tgids
            .iter()
            .map(|&g| comm_key(process_comm(tasks, Some(Tid(g)), "")))
            .collect();
        let ranked = ordinals(names, |i| starts[&tgids[i]]);
        let by_tgid = tgids
            .iter()
            .zip(ranked)
            .map(|(&g, (name, ord))| {
                let key = match by {
                    By::Comm => name,
                    By::Ordinal => format!("{name}#{ord}"),
                    By::Pid => format!("{name}[{g}]"),
                };
                (g, key)
            })
            .collect();
        ProcessKeys { by_tgid }
    }

    /// The key of process `tgid`, or `comm_key(name)` when it has none.
    pub fn key(&self, tgid: Option<Tid>, name: &str) -> String {
        tgid.and_then(|g| self.by_tgid.get(&g.0).cloned())
            .unwrap_or_else(|| comm_key(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kworkers_collapse_and_kthreads_keep_their_cpu() {
        assert_eq!(comm_key("kworker/u16:3"), "kworker/u*");
        assert_eq!(comm_key("kworker/1:2"), "kworker/1:*");
        assert_eq!(comm_key("kworker/0:1H"), "kworker/0:*H");
        assert_eq!(comm_key("kworker/0:1-events"), "kworker/0:*");
        assert_eq!(comm_key("ksoftirqd/1"), "ksoftirqd/1");
        assert_eq!(comm_key("hackbench"), "hackbench");
    }

    #[test]
    fn ordinals_rank_by_start_within_a_key() {
        let keys = vec!["a".to_string(), "b".into(), "a".into(), "a".into()];
        let starts = [30u64, 0, 10, 20];
        let r = ordinals(keys, |i| starts[i]);
        assert_eq!(
            r.iter().map(|(_, o)| *o).collect::<Vec<_>>(),
            vec![2, 0, 0, 1]
        );
    }
}
