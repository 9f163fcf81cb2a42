//! Helpers shared by the schedscope integration tests: who we run as, whether
//! perf is there, per-process scratch directories and running a command for
//! its output. Dev-only; depends on nothing beyond std.
//!
//! The root and perf checks come in variants on purpose: each keeps exactly
//! the semantics the tests that use it had before they were shared (real or
//! effective uid, `perf` merely starting or also exiting 0).

use std::path::PathBuf;
use std::process::Command;

/// The `Uid:` field at `index` in /proc/self/status (1 real, 2 effective),
/// `None` when the file or the field cannot be read.
fn status_uid(index: usize) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(index))
        .map(str::to_string)
}

/// True when the real uid in /proc/self/status is 0; false when it is not
/// or cannot be read.
pub fn real_uid_is_root() -> bool {
    status_uid(1).as_deref() == Some("0")
}

/// True when the effective uid in /proc/self/status is 0; false when it is
/// not or cannot be read.
pub fn effective_uid_is_root() -> bool {
    status_uid(2).as_deref() == Some("0")
}

/// True when /proc/self (owned by the effective uid of this process) belongs
/// to uid 0; false when it does not or cannot be read.
pub fn proc_self_owned_by_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1)
        == 0
}

/// What `id -u` says: `Some(true)` for uid 0, `Some(false)` otherwise, and
/// `None` when `id` cannot be run at all.
pub fn id_u_is_root() -> Option<bool> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    Some(String::from_utf8_lossy(&uid.stdout).trim() == "0")
}

/// True when `perf --version` can be started (its exit status is not
/// looked at).
pub fn perf_starts() -> bool {
    Command::new("perf").arg("--version").output().is_ok()
}

/// True when `perf --version` can be started and exits 0.
pub fn perf_works() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `$TMPDIR/schedscope-{tag}-{pid}`, created (with its parents) if missing;
/// an existing directory is reused as it is. Panics when it cannot be
/// created.
pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedscope-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `cmd` and return its stdout (lossily decoded); panics, naming the
/// command, when it cannot be started or exits unsuccessfully (then with its
/// stderr).
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Per-CPU idle time from `/proc/stat` text: for each `cpuN` line, `N ->
/// (idle + iowait, all fields)` in USER_HZ ticks (see [`user_hz`]); the
/// aggregate `cpu` line is left out. `None` when a `cpuN` line has fewer
/// than the five fields up to iowait or a field is not a number.
pub fn proc_stat_idle_ticks(text: &str) -> Option<std::collections::BTreeMap<u32, (u64, u64)>> {
    let mut out = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(cpu) = f.next().and_then(|c| c.strip_prefix("cpu")) else {
            continue;
        };
        if cpu.is_empty() {
            continue;
        }
        let cpu: u32 = cpu.parse().ok()?;
        let v: Vec<u64> = f.map(str::parse).collect::<Result<_, _>>().ok()?;
        // user nice system idle iowait irq softirq steal guest guest_nice;
        // guest time is also counted in user (and guest_nice in nice)
        let idle = v.get(3)? + v.get(4)?;
        let all = v.iter().take(8).sum();
        out.insert(cpu, (idle, all));
    }
    Some(out)
}

/// The clock ticks per second of `/proc/stat` (USER_HZ), from `getconf
/// CLK_TCK`; 100 (the value on every common architecture) when getconf
/// cannot say.
pub fn user_hz() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .filter(|&hz| hz > 0)
        .unwrap_or(100)
}

/// The cgroup v1 `cpu` controller's mount, `/sys/fs/cgroup/cpu`, when it
/// is mounted there with CFS bandwidth control (`cpu.cfs_quota_us`).
pub fn cgroup_v1_cpu() -> Option<PathBuf> {
    let dir = PathBuf::from("/sys/fs/cgroup/cpu");
    dir.join("cpu.cfs_quota_us").is_file().then_some(dir)
}

/// A system-wide recorder for [`record_system_wide`].
#[derive(Clone, Copy, Debug)]
pub enum Recorder<'a> {
    /// `perf record -q -a -e EVENTS` (a comma list).
    Perf(&'a str),
    /// A schedscope binary's `record`, with these options before `--` (its
    /// default events when they name none).
    Schedscope(&'a std::path::Path, &'a [&'a str]),
}

/// What [`record_system_wide`] recorded.
#[derive(Debug)]
pub struct Recorded {
    /// The perf.data file written.
    pub file: PathBuf,
    /// The recorder's stderr (schedscope's summary, perf's messages).
    pub stderr: String,
}

/// Record the whole system with `recorder` into `out` while `command`
/// runs (the recorder starts it and stops when it exits), stdin closed.
/// `Err` (naming the recorder, with its exit status and stderr) when it
/// cannot be started, exits unsuccessfully (as it does when `command`
/// fails) or leaves no file.
pub fn record_system_wide<S: AsRef<std::ffi::OsStr>>(
    recorder: Recorder,
    out: &std::path::Path,
    command: &[S],
) -> Result<Recorded, String> {
    let mut cmd = match recorder {
        Recorder::Perf(events) => {
            let mut c = Command::new("perf");
            c.args(["record", "-q", "-a", "-e", events]);
            c
        }
        Recorder::Schedscope(bin, opts) => {
            let mut c = Command::new(bin);
            c.arg("record").args(opts);
            c
        }
    };
    cmd.arg("-o").arg(out).arg("--").args(command);
    cmd.stdin(std::process::Stdio::null());
    let o = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() {
        return Err(format!("{cmd:?} failed ({}):\n{stderr}", o.status));
    }
    if !out.is_file() {
        return Err(format!("{cmd:?} wrote no {}:\n{stderr}", out.display()));
    }
    Ok(Recorded {
        file: out.to_path_buf(),
        stderr,
    })
}

/// The shared real-trace corpus (`real-traces/`, kept outside the
/// repository): `$SCHEDSCOPE_REAL_TRACES`, else the first
/// `shared/real-traces` folder beside the repository or one of its parents
/// (CI puts `shared/` beside the clone; worktrees sit deeper). Panics,
/// saying how to point at it, when there is none: the tests that read it
/// must not pass without it.
pub fn real_traces_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SCHEDSCOPE_REAL_TRACES") {
        return PathBuf::from(d);
    }
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let repo = repo.canonicalize().unwrap_or(repo);
    for dir in repo.ancestors() {
        let d = dir.join("shared/real-traces");
        if d.is_dir() {
            return d;
        }
    }
    panic!(
        "no shared/real-traces directory beside {} or its parents (set SCHEDSCOPE_REAL_TRACES to it): the real-trace corpus cannot be checked",
        repo.display()
    );
}

/// `NAME` in [`real_traces_dir`]; panics, naming it, when it is missing.
pub fn real_trace(name: &str) -> PathBuf {
    let dir = real_traces_dir();
    let p = dir.join(name);
    assert!(
        p.is_file(),
        "real trace {name} is missing from {} (see that folder's README)",
        dir.display()
    );
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_idle_is_idle_plus_iowait_per_cpu() {
        let text = "cpu  10 1 20 300 4 0 2 0 0 0\n\
                    cpu0 5 0 10 100 3 0 1 7 9 0\n\
                    cpu1 5 1 10 200 1 0 1 0 0 0\n\
                    intr 123 4 5\nctxt 99\n";
        let m = proc_stat_idle_ticks(text).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[&0], (103, 5 + 10 + 100 + 3 + 1 + 7));
        assert_eq!(m[&1], (201, 5 + 1 + 10 + 200 + 1 + 1));
        // this machine's own file parses, one entry per CPU line
        let own = std::fs::read_to_string("/proc/stat").unwrap();
        let lines = own
            .lines()
            .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
            .count();
        assert_eq!(proc_stat_idle_ticks(&own).unwrap().len(), lines);
        assert!(proc_stat_idle_ticks("cpu0 1 2 3\n").is_none(), "no iowait");
        assert!(proc_stat_idle_ticks("cpu0 1 2 3 x 5\n").is_none());
    }
}
