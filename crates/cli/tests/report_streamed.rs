//! `schedscope report` computed from streams of the file's events (up to
//! three passes: the timeline built as the events stream past, idle and
//! lhp on it in a third) gives the same output, byte for byte, as from the
//! loaded events, for every section. The
//! load is the oracle: `SCHEDSCOPE_STREAM_FROM` moves the size from which
//! `report` streams (0: always; a huge value: never).
//!
//! On the perf.data fixtures, and on simulated recordings written as
//! perf.data with the losses this project's loss tests inject (a full
//! ring's PERF_RECORD_LOST spans, this VM's untraced switches out of
//! idle), with and without `sched_stat_runtime`: the repairs, their
//! look-ahead, the uncertain windows around loss records and the VMs'
//! vCPU threads are all on the streamed path.

use schedscope_sim::loss::{drop_idle_exits, drop_spans, with_stat_runtime};
use schedscope_sim::{simulate, simulate_bandwidth, BandwidthSpec, Config};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `schedscope ARGS` with the stream threshold `from` and the timing
/// lines on: (exit code, stdout, stderr).
fn schedscope(from: u64, args: &[&OsStr]) -> (Option<i32>, Vec<u8>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(args)
        .env("SCHEDSCOPE_STREAM_FROM", from.to_string())
        .env("SCHEDSCOPE_TIMING", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o.status.code(), o.stdout, err)
}

/// `report ARGS FILE` with the stream threshold `from`: (exit code,
/// stdout, stderr).
fn report(from: u64, args: &[&str], file: &Path) -> (Option<i32>, Vec<u8>, String) {
    let mut all = vec![OsStr::new("report")];
    all.extend(args.iter().map(OsStr::new));
    all.push(file.as_os_str());
    schedscope(from, &all)
}

/// `schedscope ARGS`, which must succeed, loaded and streamed: the
/// outputs (stdout; stderr without the timing lines) are equal, and
/// the streamed run made pass `pass`.
fn same_loaded_and_streamed(args: &[&OsStr], pass: u32) {
    let (code, loaded, err) = schedscope(u64::MAX, args);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("stream pass"), "{err}");
    let (code, streamed, err2) = schedscope(0, args);
    assert_eq!(code, Some(0), "{err2}");
    assert!(
        err2.contains(&format!("timing: stream pass {pass}")),
        "{err2}"
    );
    assert_eq!(
        String::from_utf8_lossy(&streamed),
        String::from_utf8_lossy(&loaded),
        "{args:?}"
    );
}

/// stderr without the timing lines (`SCHEDSCOPE_TIMING`, which tells the
/// two ways apart).
fn untimed(err: &str) -> String {
    err.lines()
        .filter(|l| !l.starts_with("timing: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Whether `report` streamed `file` for `args` (and built the timeline
/// in a second pass); the outputs of both ways (stdout, stderr, exit
/// code) must be equal.
fn same_both_ways(file: &Path, args: &[&str]) -> bool {
    let (code, loaded, err) = report(u64::MAX, args, file);
    assert!(!err.contains("stream pass"), "{err}");
    let (code2, streamed, err2) = report(0, args, file);
    assert_eq!(
        (code2, String::from_utf8_lossy(&streamed), untimed(&err2)),
        (code, String::from_utf8_lossy(&loaded), untimed(&err)),
        "{} {args:?}",
        file.display()
    );
    err2.contains("timing: stream pass 2")
}

const SECTIONS: [&[&str]; 9] = [
    &["--all", "--format", "json"],
    &["--all"],
    &["--gang", "--format", "json"],
    &["--gang", "--latency"],
    &["--gang-of", "comm=worker", "--format", "json"],
    &["--idle", "--format", "json"],
    &["--lhp", "--format", "json"],
    &["--tlb", "--format", "json"],
    &["--lhp", "--gang-of", "comm=vcpu", "--tlb", "--latency"],
];

#[test]
fn streamed_sections_equal_the_loaded_on_the_fixtures() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut streamed = 0;
    for name in [
        "perf/sched_small.data",
        "perf/stat_runtime.data",
        "perf/callchain.data",
        "perf-empty/switch_filtered.data",
        "sim/bare-metal-s1.data",
        "sim/mixed-s1.data",
        // zstd-compressed: refused by the stream, loaded whole
        "idle/hackbench.data",
    ] {
        for args in SECTIONS {
            streamed += same_both_ways(&root.join(name), args) as u32;
        }
    }
    assert_eq!(streamed, 6 * SECTIONS.len() as u32);
}

#[test]
fn streamed_sections_equal_the_loaded_under_loss() {
    let dir = std::env::temp_dir().join(format!("schedscope-streamed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (bandwidth, _) = simulate_bandwidth(&BandwidthSpec::old_kernel(1));
    let mixed = simulate(&Config::scenario("mixed", 3).unwrap());
    let mut files = Vec::new();
    for (name, base) in [("bandwidth", bandwidth), ("mixed", mixed)] {
        for (stat, sim) in [
            (false, base.clone()),
            (true, with_stat_runtime(&base, 4_000_000)),
        ] {
            let cases = [
                ("vm", drop_idle_exits(&sim, 1).0),
                ("ring", drop_spans(&sim, 1, 0.05, 7)),
            ];
            for (loss, lossy) in cases {
                let p = dir.join(format!("{name}-{loss}-stat{stat}.data"));
                std::fs::write(&p, schedscope_sim::perf::to_perf_data(&lossy).unwrap()).unwrap();
                files.push(p);
            }
        }
    }
    let mut widened = 0;
    for p in &files {
        for args in SECTIONS {
            assert!(same_both_ways(p, args), "{} streamed", p.display());
        }
        // the losses are there to be repaired and bounded
        let (code, out, err) = report(0, &["--gang", "--latency", "--format", "json"], p);
        assert_eq!(code, Some(0), "{err}");
        let d: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let ring = p.to_string_lossy().contains("ring");
        assert_eq!(
            d["trace"]["lost"].as_u64().unwrap() > 0,
            ring,
            "{}",
            p.display()
        );
        let lat = &d["latency"];
        widened += (lat["max_delay_ns_min"].as_u64() < lat["max_delay_ns_max"].as_u64()) as u32;
    }
    // (the loss widens the largest wait's bounds somewhere)
    assert!(widened > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn streamed_diff_equals_the_loaded() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let (a, b) = (
        root.join("sim/bare-metal-s1.data"),
        root.join("sim/mixed-s1.data"),
    );
    for format in ["text", "json"] {
        let args = [
            "diff".as_ref(),
            a.as_os_str(),
            b.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ];
        same_loaded_and_streamed(&args, 3);
    }
}

#[test]
fn streamed_equals_the_loaded_beyond_the_look_aheads() {
    // A lossy recording longer than several of idle's look-aheads
    // (200,000 events) and the build's (65,536): the cursor waits for its
    // look-ahead and trims its window, the build's ring turns over, with
    // the production constants (the unit tests shrink idle's).
    let dir = std::env::temp_dir().join(format!("schedscope-streamed-big-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cfg = Config::scenario("mixed", 11).unwrap();
    cfg.ticks = 1_100_000;
    let sim = with_stat_runtime(&simulate(&cfg), 4_000_000);
    let lossy = drop_spans(&sim, 1, 0.05, 3);
    let p = dir.join("big-lossy.data");
    std::fs::write(&p, schedscope_sim::perf::to_perf_data(&lossy).unwrap()).unwrap();
    let (_, out, err) = report(0, &["--format", "json"], &p);
    let d: serde_json::Value =
        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let events = d["trace"]["events"].as_u64().unwrap();
    assert!(events > 3 * 200_000, "{events} events");
    assert!(d["trace"]["lost"].as_u64().unwrap() > 0);
    assert!(same_both_ways(&p, &["--all", "--format", "json"]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn streamed_info_equals_the_loaded() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    for name in [
        "perf/stat_runtime.data",
        "perf/sched_small.data",
        "sim/mixed-s1.data",
    ] {
        let path = root.join(name);
        let args = [
            "info".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            path.as_os_str(),
        ];
        same_loaded_and_streamed(&args, 1);
    }
}
