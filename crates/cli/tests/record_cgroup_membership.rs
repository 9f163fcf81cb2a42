//! `schedscope record` stores each thread's cgroup (feature bit 201), and the
//! idle and gang analyses use it. Two CPU burners run in a fresh cpu cgroup
//! capped at half a CPU (so they are throttled) while a recording runs; the
//! oracle for "the burner's threads" is the cgroup's own `cgroup.procs`.
//!
//! Needs root, perf and a cpu cgroup controller (v1 `cpu` hierarchy, or v2
//! with `cpu` available); the test prints why it skips otherwise.

#[path = "record_common/mod.rs"]
mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A cpu cgroup made for the test; dropping it kills what runs in it and
/// removes it (also when an assertion failed).
struct TestCgroup {
    dir: PathBuf,
    /// Path relative to the hierarchy root, e.g. `/schedscope-cgtest-42`.
    rel: String,
    child: Option<Child>,
}

impl TestCgroup {
    /// Create it with a quota of half a CPU, or say why it cannot be made.
    fn create() -> Result<TestCgroup, String> {
        let name = format!("schedscope-cgtest-{}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        let v2 = Path::new("/sys/fs/cgroup");
        let (root, is_v2) = if v1.join("cpu.cfs_quota_us").is_file() {
            (v1, false)
        } else if std::fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "cpu"))
        {
            // Children of the root get the cpu controller only when enabled.
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+cpu");
            (v2, true)
        } else {
            return Err("no cgroup v1 cpu hierarchy and no cgroup v2 cpu controller".into());
        };
        let dir = root.join(&name);
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let cg = TestCgroup {
            dir,
            rel: format!("/{name}"),
            child: None,
        };
        let (file, val) = if is_v2 {
            ("cpu.max", "50000 100000")
        } else {
            ("cpu.cfs_quota_us", "50000")
        };
        std::fs::write(cg.dir.join(file), val)
            .map_err(|e| format!("write {}/{file}: {e}", cg.dir.display()))?;
        Ok(cg)
    }

    fn procs(&self) -> Vec<i32> {
        let mut v: Vec<i32> = std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        v.sort_unstable();
        v
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            let procs = self.procs();
            if procs.is_empty() {
                break;
            }
            for p in procs {
                let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("could not remove {}: {e}", self.dir.display());
        }
    }
}

fn report_json(file: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .arg("report")
        .arg(file)
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("run schedscope report");
    assert!(
        out.status.success(),
        "report {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "report {args:?}: not JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn burners_in_a_capped_cgroup_carry_it_in_the_file_and_in_idle_and_gang() {
    require_root_and_perf!();
    let mut cg = match TestCgroup::create() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    // The shell moves itself into the cgroup, then forks a second burner:
    // two single-threaded processes that spin (no sleeping main thread).
    let script = format!(
        "echo $$ > {}/cgroup.procs && {{ while :; do :; done & while :; do :; done; }}",
        cg.dir.display()
    );
    cg.child = Some(
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sh"),
    );
    let t0 = Instant::now();
    while cg.procs().len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "burners did not enter {}",
            cg.dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let burners = cg.procs();
    assert_eq!(burners.len(), 2, "two burners in the cgroup: {burners:?}");

    let dir = tmpdir("cgroup-membership");
    let out = record(
        &dir,
        "c.data",
        &["--duration", "2", "--cgroup", &cg.rel],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "record failed:\n{stderr}");
    let file = dir.join("c.data");
    // Still the same two burners (nothing entered or left meanwhile).
    assert_eq!(cg.procs(), burners);

    // 1. The decoded tasks of the burners carry the cgroup path.
    let trace = schedscope_parser::load(&file).expect("decode");
    for &tid in &burners {
        let t = trace
            .tasks
            .by_tid(schedscope_trace::Tid(tid))
            .unwrap_or_else(|| panic!("burner {tid} in the task table"));
        assert_eq!(t.cgroup.as_deref(), Some(cg.rel.as_str()), "burner {tid}");
    }
    let in_cg: Vec<i32> = {
        let mut v: Vec<i32> = trace
            .tasks
            .iter()
            .filter(|t| t.cgroup.as_deref() == Some(cg.rel.as_str()))
            .map(|t| t.tid.0)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    assert_eq!(in_cg, burners, "no other task is put in the test cgroup");
    assert!(
        trace.tasks.iter().filter(|t| t.cgroup.is_some()).count() > 10,
        "the other threads of the machine have their cgroups too"
    );

    // 2. perf still reads the file (bit 201 is unknown to it).
    let counts = perf_script_counts(&file, true);
    assert!(counts.get("sched:sched_switch").copied().unwrap_or(0) > 0);

    // 3. Idle: attribution recorded, tasks mapped by membership.
    let v = report_json(&file, &["--idle"]);
    let idle = &v["idle"];
    assert_eq!(idle["attribution"], "recorded", "{idle}");
    assert_eq!(idle["cgroup_mapping"], "membership", "{idle}");
    let cgs = idle["cgroups"].as_array().expect("cgroups array");
    let mine = cgs
        .iter()
        .find(|c| c["path"] == cg.rel.as_str())
        .unwrap_or_else(|| panic!("{} in idle.cgroups: {cgs:?}", cg.rel));
    assert_eq!(mine["tasks"], 2, "{mine}");
    assert!(mine["nr_throttled"].as_u64().unwrap_or(0) > 0, "{mine}");

    // 4. Gang by cgroup: one gang, exactly the burners.
    let spec = format!("cgroup={}", cg.rel);
    let v = report_json(&file, &["--gang", "--gang-of", &spec]);
    let gangs = v["gang"]["gangs"].as_array().expect("gangs array");
    assert_eq!(gangs.len(), 1, "{gangs:?}");
    let mut members: Vec<i64> = gangs[0]["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|m| m.as_i64())
        .collect();
    members.sort_unstable();
    let want: Vec<i64> = burners.iter().map(|&p| p as i64).collect();
    assert_eq!(members, want);

    // A path the trace never saw names the option and lists real cgroups.
    let out = Command::new(BIN)
        .arg("report")
        .arg(&file)
        .args(["--gang", "--gang-of", "cgroup=/no/such/cgroup"])
        .output()
        .expect("run report");
    // The section's error is printed in the report (stdout), others on stderr.
    let err = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert!(
        err.contains("--gang-of cgroup=/no/such/cgroup") && err.contains("threads)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
