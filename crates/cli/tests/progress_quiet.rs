//! Progress lines go to stderr only when it is a terminal: with stderr
//! piped (logs, CI, `2>file`), `report`, `info`, `export` and `diff` print
//! exactly what they printed before there was progress, byte for byte.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

/// Run schedscope with stderr piped (not a terminal); (code, stdout, stderr).
fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(args)
        .env_remove("SCHEDSCOPE_TIMING")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

#[test]
fn report_info_and_diff_print_nothing_on_a_piped_stderr() {
    let f = fixture("sim/bare-metal-s1.data");
    let m = fixture("sim/mixed-s1.data");
    for args in [
        vec![os("report"), f.as_os_str()],
        vec![os("report"), os("--all"), f.as_os_str()],
        vec![
            os("report"),
            os("--all"),
            os("--format"),
            os("json"),
            m.as_os_str(),
        ],
        vec![os("info"), f.as_os_str()],
        vec![os("diff"), os("--latency"), f.as_os_str(), m.as_os_str()],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.is_empty(), "{args:?}");
        assert_eq!(err, "", "{args:?}: stderr must stay empty");
    }
}

#[test]
fn export_prints_only_its_summary_on_a_piped_stderr() {
    let f = fixture("sim/bare-metal-s1.data");
    let dir = std::env::temp_dir().join(format!("schedscope-quiet-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (code, out, err) = run(&[
        os("export"),
        os("--csv"),
        dir.as_os_str(),
        os("--tables"),
        os("trace,thread"),
        f.as_os_str(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err:?}");
    assert!(
        lines[0].starts_with(&format!("schedscope: exported {} as host=", f.display()))
            && lines[0].contains(": 2 tables, ")
            && lines[0].ends_with(" rows"),
        "{err:?}"
    );
    assert!(
        err.ends_with('\n') && !err.contains('\r') && !err.contains('\x1b'),
        "{err:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
