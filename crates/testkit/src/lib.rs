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
