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
    for_each_thread(|tgid, tid, ppid| {
        if let Ok(comm) = fs::read_to_string(format!("/proc/{tgid}/task/{tid}/comm")) {
            out.push(ThreadInfo {
                tgid,
                tid,
                ppid: ppid(),
                comm: comm.trim_end_matches('\n').to_string(),
            });
        }
    });
    out
}

/// `(tgid, tid)` of every thread in /proc: only directory listings, no
/// file reads (for the end of a recording, where names are known).
pub fn thread_ids() -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for_each_thread(|tgid, tid, _| out.push((tgid, tid)));
    out
}

/// Call `f(tgid, tid, ppid)` for each thread; `ppid()` reads the process's
/// parent from /proc/<tgid>/stat on first use (0 when unknown).
fn for_each_thread(mut f: impl FnMut(u32, u32, &mut dyn FnMut() -> u32)) {
    let Ok(dir) = fs::read_dir("/proc") else {
        return;
    };
    for ent in dir.flatten() {
        let Some(tgid) = ent.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(tasks) = fs::read_dir(format!("/proc/{tgid}/task")) else {
            continue;
        };
        let mut ppid_cache: Option<u32> = None;
        let mut ppid = || {
            *ppid_cache.get_or_insert_with(|| {
                fs::read_to_string(format!("/proc/{tgid}/stat"))
                    .ok()
                    .and_then(|s| parse_ppid(&s))
                    .unwrap_or(0)
            })
        };
        for t in tasks.flatten() {
            if let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                f(tgid, tid, &mut ppid);
            }
        }
    }
}

/// Address of `_text` in /proc/kallsyms (None when hidden, i.e. all zero,
/// or unreadable). Reads only up to that line: kallsyms is sorted by
/// address and `_text` comes right after the per-CPU symbols, so this
/// reads kilobytes instead of the whole multi-megabyte file.
pub fn kernel_text_address() -> Option<u64> {
    use std::io::BufRead;
    let f = std::io::BufReader::new(fs::File::open("/proc/kallsyms").ok()?);
    f.lines().map_while(Result::ok).find_map(|l| {
        let mut it = l.split_whitespace();
        let addr = it.next()?;
        let _kind = it.next()?;
        (it.next()? == "_text").then(|| u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0))
    })?
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
        let ppid = parse_ppid(&fs::read_to_string("/proc/self/stat").unwrap());
        assert_eq!(Some(mine.ppid), ppid);
        assert!(thread_ids().contains(&(me, me)));
    }

    #[test]
    fn kernel_text_is_the_kallsyms_text_symbol() {
        let all = fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let want = all.lines().find_map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            (v.get(2) == Some(&"_text"))
                .then(|| u64::from_str_radix(v[0], 16).ok())
                .flatten()
                .filter(|&a| a != 0)
        });
        assert_eq!(kernel_text_address(), want);
    }
}
