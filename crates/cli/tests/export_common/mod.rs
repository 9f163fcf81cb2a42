//! Shared by the export tests: run schedscope, find python3 with the client
//! modules a test needs (a missing client fails the test under CI=true and
//! skips it, with the reason printed, elsewhere), run the check scripts.

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fixture path.
pub fn fixture(rel: &str) -> PathBuf {
    repo().join("fixtures").join(rel)
}

/// A fresh, empty temporary directory.
pub fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedscope-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run schedscope; panics with its stderr when it fails.
pub fn schedscope(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "schedscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Run schedscope, expecting failure; returns its stderr.
pub fn schedscope_fails(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "schedscope {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `report --all --format json` of a file.
pub fn report_json(file: &Path) -> Value {
    serde_json::from_str(&schedscope(&[
        "report",
        "--all",
        "--format",
        "json",
        file.to_str().unwrap(),
    ]))
    .unwrap()
}

/// Whether python3 can import every module; when not, panic under CI=true
/// (the setup script installs them) and otherwise print why the test is
/// skipped and return false.
pub fn have_python(modules: &[&str]) -> bool {
    let code = modules
        .iter()
        .map(|m| format!("import {m}"))
        .collect::<Vec<_>>()
        .join("; ");
    let ok = Command::new("python3")
        .args(["-c", &code])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let msg =
            format!("python3 with {modules:?} is not available (scripts/setup.sh installs them)");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}");
        }
        eprintln!("SKIPPED: {msg}");
    }
    ok
}

/// Run `crates/export/tests/py/SCRIPT ARGS...` and parse its JSON output.
pub fn py(script: &str, args: &[&str]) -> Value {
    let path = repo().join("crates/export/tests/py").join(script);
    let out = Command::new("python3")
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{script}: bad JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Run the named SQL queries of `queries` (`{"name": "SQL"}`, `@table` for
/// a table of the root) with DuckDB over the Parquet root `pq`
/// (`crates/export/tests/py/duckdb_sql.py`); their rows by name.
pub fn duckdb(pq: &Path, queries: &Value) -> Value {
    use std::io::Write;
    let script = repo().join("crates/export/tests/py/duckdb_sql.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(pq)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(queries.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "duckdb_sql.py failed");
    serde_json::from_slice(&out.stdout).unwrap()
}
