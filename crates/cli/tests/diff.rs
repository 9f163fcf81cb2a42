//! `schedscope diff`: a trace against itself is all 0%; the same trace as
//! perf.data, as text and as an exported Parquet root gives the same
//! numbers; several traces per side get a significance mark; and two
//! recordings of `perf bench sched messaging` with 1 and 4 groups show the
//! expected direction; the text shows durations in ms/µs, largest change
//! first, cut to `--top` rows per section, while JSON keeps every row in ns.

#[path = "record_common/mod.rs"]
mod common;
mod export_common;

use export_common::*;
use serde_json::Value;

fn diff_json(args: &[&str]) -> Value {
    let mut a = vec!["diff", "--format", "json"];
    a.extend(args);
    serde_json::from_str(&schedscope(&a)).unwrap()
}

fn rows(d: &Value) -> &Vec<Value> {
    d["rows"].as_array().unwrap()
}

fn assert_all_zero(d: &Value, what: &str) {
    assert!(rows(d).len() >= 10, "{what}: too few rows: {d}");
    for r in rows(d) {
        assert_eq!(r["pct_change"], 0.0, "{what}: {r}");
        assert_eq!(r["base"]["mean"], r["new"]["mean"], "{what}: {r}");
    }
    assert_eq!(d["base_only"], serde_json::json!([]), "{what}");
    assert_eq!(d["new_only"], serde_json::json!([]), "{what}");
}

fn row<'a>(d: &'a Value, section: &str, metric: &str, key: &str, stat: &str) -> &'a Value {
    rows(d)
        .iter()
        .find(|r| {
            r["section"] == section
                && r["metric"] == metric
                && r["entity_key"] == key
                && r["stat"] == stat
        })
        .unwrap_or_else(|| panic!("no row {section} {metric} [{key}] {stat} in {d}"))
}

#[test]
fn a_trace_against_itself_is_all_zero() {
    for f in ["perf/sched_small.data", "sim/mixed-s1.data"] {
        let p = fixture(f);
        let p = p.to_str().unwrap();
        let d = diff_json(&[p, p]);
        assert_all_zero(&d, f);
        assert_eq!(d["tested"], false);
        assert!(d["footnote"]
            .as_str()
            .unwrap()
            .contains("no significance test was possible"));
        assert_eq!(d["schema"], "schedscope-diff/1");
        let text = schedscope(&["diff", p, p]);
        assert!(text.contains("positive = better"), "{text}");
        assert!(
            text.contains("Parameter") && text.contains("% change"),
            "{text}"
        );
        assert!(
            text.contains("+0.00%") && !text.contains("-0.00%"),
            "{text}"
        );
    }
}

#[test]
fn perf_data_text_and_parquet_root_give_the_same_numbers() {
    let data = fixture("sim/mixed-s1.data");
    let text = fixture("sim/mixed-s1.txt");
    let d = diff_json(&[data.to_str().unwrap(), text.to_str().unwrap()]);
    assert_all_zero(&d, "perf.data vs ftrace text");
    let root = fresh_dir("diff-root");
    let pq = root.join("pq");
    schedscope(&[
        "export",
        data.to_str().unwrap(),
        "--parquet",
        pq.to_str().unwrap(),
    ]);
    let d = diff_json(&[data.to_str().unwrap(), pq.to_str().unwrap()]);
    assert_all_zero(&d, "perf.data vs its Parquet export");
    assert!(
        d["new"][0].as_str().unwrap().contains("run=r"),
        "{}",
        d["new"]
    );
    let err = schedscope_fails(&[
        "diff",
        "--by",
        "ordinal",
        data.to_str().unwrap(),
        pq.to_str().unwrap(),
    ]);
    assert!(err.contains("--by comm"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn several_traces_per_side_are_tested_for_significance() {
    let a = fixture("sim/mixed-s1.data");
    let b = fixture("sim/bare-metal-s1.data");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let d = diff_json(&[a, a, a, "--", b, b, b]);
    assert_eq!(d["tested"], true);
    assert_eq!(d["base"].as_array().unwrap().len(), 3);
    // Identical runs per side: a zero-width interval, significant exactly
    // when the means differ.
    for r in rows(&d) {
        let differ = r["base"]["mean"] != r["new"]["mean"];
        assert_eq!(r["significant"], differ, "{r}");
    }
    assert!(rows(&d).iter().any(|r| r["significant"] == true));
    // Unmatched entities are listed: the VMs exist only in mixed-s1.
    assert!(
        d["base_only"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "vm qemu-vm0"),
        "{}",
        d["base_only"]
    );
    let text = schedscope(&["diff", a, a, a, "--", b, b, b]);
    assert!(text.contains(" *\n"), "significance mark: {text}");
    assert!(text.contains("only in base: "), "{text}");
    let md = schedscope(&["diff", "--format", "md", a, b]);
    assert!(
        md.contains("| Section | Parameter | Base | New | % change |"),
        "{md}"
    );
    let csv = schedscope(&["diff", "--format", "csv", a, b]);
    assert!(csv.starts_with("section,metric,entity_kind,entity_key,stat,unit,better,base_mean"));
    assert_eq!(csv.lines().count(), rows(&diff_json(&[a, b])).len() + 1);
    let err = schedscope_fails(&["diff", a, b, a]);
    assert!(err.contains("BASE... -- NEW..."), "{err}");
}

#[test]
fn more_messaging_groups_show_the_expected_direction() {
    if let Err(why) = common::can_record() {
        eprintln!("SKIPPED: {why} (needs root and perf)");
        return;
    }
    let dir = common::tmpdir("diff-messaging");
    for (file, groups) in [("g1.data", "1"), ("g8.data", "8")] {
        let out = common::record(
            &dir,
            file,
            &[],
            &[
                "perf",
                "bench",
                "sched",
                "messaging",
                "-g",
                groups,
                "-l",
                "200",
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (g1, g8) = (dir.join("g1.data"), dir.join("g8.data"));
    let d = diff_json(&["--latency", g1.to_str().unwrap(), g8.to_str().unwrap()]);
    // Eight groups exchange eight times the messages: more switches, more
    // wakeups, more CPU time for the messaging tasks (higher is better for
    // these counts, so the % change is positive).
    for (metric, key) in [
        ("switches", ""),
        ("wakeups", ""),
        ("runtime", "sched-messaging"),
    ] {
        let r = row(&d, "latency", metric, key, "total");
        let p = r["pct_change"].as_f64().unwrap();
        assert!(p > 20.0, "{metric} [{key}]: {r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_invalid_gang_of_exits_2_before_loading() {
    for cmd in [
        &[
            "diff",
            "--gang-of",
            "pid=abc",
            "/nonexistent/a.data",
            "/nonexistent/b.data",
        ][..],
        &[
            "export",
            "--gang-of",
            "pid=abc",
            "--parquet",
            "/nonexistent/out",
            "/nonexistent/a.data",
        ],
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_schedscope"))
            .args(cmd)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(
            err.starts_with("schedscope: invalid --gang-of pid=abc: ")
                && err.contains("`abc` is not a process id"),
            "{cmd:?}: {err}"
        );
        assert!(
            !err.contains("nonexistent"),
            "loaded before checking: {err}"
        );
        assert!(o.stdout.is_empty(), "{cmd:?}");
    }
}

#[test]
fn by_ordinal_compares_threads() {
    // perf bench sched messaging: many threads with the same names, told
    // apart by start order.
    let p = fixture("perf/sched_small.data");
    let p = p.to_str().unwrap();
    let d = diff_json(&["--by", "ordinal", "--latency", p, p]);
    assert_all_zero(&d, "--by ordinal");
    let threads: Vec<&Value> = rows(&d)
        .iter()
        .filter(|r| r["entity_kind"] == "thread")
        .collect();
    assert!(!threads.is_empty(), "no per-thread rows: {d}");
    assert!(
        !rows(&d).iter().any(|r| r["entity_kind"] == "task_group"),
        "{d}"
    );
    // Keys are the thread table's match_key#match_ordinal, one per thread.
    let keys: std::collections::BTreeSet<&str> = threads
        .iter()
        .map(|r| r["entity_key"].as_str().unwrap())
        .collect();
    assert!(
        keys.iter().all(|k| k.contains('/') && k.contains('#')),
        "{keys:?}"
    );
    // The per-thread max delays are report --latency's per-task ones.
    let rep: Value =
        serde_json::from_str(&schedscope(&["report", "--latency", "--format", "json", p])).unwrap();
    let mut want: Vec<u64> = rep["latency"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["delay_max_ns"].as_u64().unwrap())
        .collect();
    let mut got: Vec<u64> = threads
        .iter()
        .filter(|r| r["metric"] == "delay" && r["stat"] == "max")
        .map(|r| r["base"]["mean"].as_f64().unwrap() as u64)
        .collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);
}

/// The form docs/diff.md gives, options after the NEW inputs
/// (`diff b1 b2 b3 -- n1 n2 n3 --idle --format md`), means what the same
/// options before the inputs mean.
#[test]
fn options_after_the_new_inputs_are_options() {
    let a = fixture("sim/mixed-s1.data");
    let b = fixture("sim/bare-metal-s1.data");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let after = schedscope(&["diff", a, a, a, "--", b, b, b, "--idle", "--format", "md"]);
    let before = schedscope(&["diff", "--idle", "--format", "md", a, a, a, "--", b, b, b]);
    assert_eq!(after, before);
    assert!(
        after.contains("| Section | Parameter | Base | New | % change |"),
        "{after}"
    );
    assert!(after.contains("| idle |"), "{after}");
    assert!(!after.contains("| latency |"), "only --idle: {after}");
}

/// Text: durations in the report's units (no ns), each section's rows by
/// |% change| (largest first), `--top N` rows with the count left out;
/// JSON and CSV are whole whatever `--top` says.
#[test]
fn text_uses_report_units_orders_by_change_and_cuts_to_top() {
    let a = fixture("sim/mixed-s1.data");
    let b = fixture("sim/bare-metal-s1.data");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let d = diff_json(&[a, b]);
    let latency: Vec<&Value> = rows(&d)
        .iter()
        .filter(|r| r["section"] == "latency")
        .collect();
    assert!(latency.len() > 3, "{d}");
    let text = schedscope(&["diff", "--top", "3", a, b]);
    assert!(!text.contains("(ns)"), "{text}");
    // The latency table: header, then the 3 rows with the largest |% change|.
    let lines: Vec<&str> = text.lines().skip_while(|l| *l != "latency").collect();
    assert!(lines[1].starts_with("Parameter"), "{text}");
    let mut by_size: Vec<f64> = latency
        .iter()
        .map(|r| r["pct_change"].as_f64().unwrap().abs())
        .collect();
    by_size.sort_by(|x, y| y.total_cmp(x));
    for (line, want) in lines[2..5].iter().zip(&by_size) {
        let got: f64 = line
            .rsplit(' ')
            .find(|w| w.ends_with('%'))
            .and_then(|w| w.trim_end_matches('%').parse().ok())
            .unwrap_or_else(|| panic!("no % change in {line:?}"));
        assert!((got.abs() - want).abs() < 0.006, "{line:?}: want |{want}|");
    }
    assert_eq!(
        lines[5],
        format!(
            "({} more rows with a smaller |% change| left out; --top 0 shows them all)",
            latency.len() - 3
        ),
        "{text}"
    );
    // --top changes neither JSON nor CSV.
    assert_eq!(diff_json(&["--top", "1", a, b]), d);
    let csv = schedscope(&["diff", "--format", "csv", "--top", "1", a, b]);
    assert_eq!(csv.lines().count(), rows(&d).len() + 1);
    // --top 0: every row.
    let all = schedscope(&["diff", "--top", "0", a, b]);
    assert!(!all.contains("left out"), "{all}");
    // The worst delay, 4471000 ns in mixed-s1 (JSON), prints in ms.
    let max = row(&d, "latency", "delay", "", "max");
    assert_eq!(max["base"]["mean"], 4_471_000.0, "{max}");
    assert!(
        all.lines()
            .any(|l| l.starts_with("delay max (ms)") && l.contains(" 4.471 ")),
        "{all}"
    );
}
