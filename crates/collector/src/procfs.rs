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
    /// Thread name (`/proc/<pid>/task/<tid>/comm`).
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

/// An executable file mapping of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecMapping {
    /// Process id.
    pub pid: u32,
    /// Start address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset.
    pub pgoff: u64,
    /// File path.
    pub path: String,
}

/// Executable file mappings of every process (from `/proc/<pid>/maps`), as
/// perf synthesizes them at the start of a recording.
pub fn exec_mappings() -> Vec<ExecMapping> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for ent in dir.flatten() {
        let Some(pid) = ent.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) {
            out.extend(maps.lines().filter_map(|l| parse_maps_line(pid, l)));
        }
    }
    out
}

/// "start-end perms offset dev inode path" for executable file mappings.
fn parse_maps_line(pid: u32, line: &str) -> Option<ExecMapping> {
    let mut it = line.split_whitespace();
    let (range, perms, off) = (it.next()?, it.next()?, it.next()?);
    let (_dev, _inode) = (it.next()?, it.next()?);
    let path = it.collect::<Vec<_>>().join(" ");
    if !perms.contains('x') || !path.starts_with('/') {
        return None;
    }
    let (a, b) = range.split_once('-')?;
    let start = u64::from_str_radix(a, 16).ok()?;
    let end = u64::from_str_radix(b, 16).ok()?;
    Some(ExecMapping {
        pid,
        start,
        len: end.checked_sub(start)?,
        pgoff: u64::from_str_radix(off, 16).ok()?,
        path,
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
    fn maps_lines_keep_executable_files_only() {
        let m = parse_maps_line(
            7,
            "7f00aa000000-7f00aa100000 r-xp 00002000 08:01 1234   /usr/lib/libc.so.6",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.len, m.pgoff),
            (0x7f00aa000000, 0x100000, 0x2000)
        );
        assert_eq!(m.path, "/usr/lib/libc.so.6");
        assert!(parse_maps_line(7, "1000-2000 rw-p 0 08:01 1 /x").is_none());
        assert!(parse_maps_line(7, "1000-2000 r-xp 0 00:00 0 [vdso]").is_none());
    }

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
