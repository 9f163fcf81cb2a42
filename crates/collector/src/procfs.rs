//! Snapshot of the threads alive when recording starts, from /proc, so the
//! file names every task and knows its tgid (perf synthesizes the same).

use std::fs;

/// One thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Process id (tgid).
    pub tgid: u32,
    /// Thread id.
    pub tid: u32,
    /// Parent process id of the process (0 when unknown).
    pub ppid: u32,
    /// Thread name (/proc/<pid>/task/<tid>/comm).
    pub comm: String,
}

/// Every thread in /proc. Threads that exit while we read are skipped.
pub fn threads() -> Vec<ThreadInfo> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for ent in dir.flatten() {
        let Some(tgid) = ent.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let ppid = fs::read_to_string(format!("/proc/{tgid}/stat"))
            .ok()
            .and_then(|s| parse_ppid(&s))
            .unwrap_or(0);
        let Ok(tasks) = fs::read_dir(format!("/proc/{tgid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(comm) = fs::read_to_string(format!("/proc/{tgid}/task/{tid}/comm")) else {
                continue;
            };
            out.push(ThreadInfo {
                tgid,
                tid,
                ppid,
                comm: comm.trim_end_matches('\n').to_string(),
            });
        }
    }
    out
}

/// Address of `_text` in /proc/kallsyms (None when hidden, i.e. all zero,
/// or unreadable).
pub fn kernel_text_address() -> Option<u64> {
    let s = fs::read_to_string("/proc/kallsyms").ok()?;
    s.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let addr = it.next()?;
        let _kind = it.next()?;
        (it.next()? == "_text")
            .then(|| u64::from_str_radix(addr, 16).ok())
            .flatten()
            .filter(|&a| a != 0)
    })
}

/// ppid is the second field after the parenthesised comm in /proc/<pid>/stat.
fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_survives_spaces_and_parens_in_comm() {
        assert_eq!(parse_ppid("42 (a) b) c) S 7 42 42 0"), Some(7));
        assert_eq!(parse_ppid("garbage"), None);
    }

    #[test]
    fn snapshot_contains_this_thread_with_its_tgid() {
        let me = std::process::id();
        let all = threads();
        let mine = all
            .iter()
            .find(|t| t.tid == me)
            .expect("own main thread listed");
        assert_eq!(mine.tgid, me);
        let comm = fs::read_to_string("/proc/self/comm").unwrap();
        assert_eq!(mine.comm, comm.trim_end());
    }
}
