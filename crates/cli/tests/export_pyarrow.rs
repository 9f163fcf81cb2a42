//! `schedscope export --parquet`: pyarrow reads every table; row counts
//! equal the decoder's `events_by_name`; the sched rows equal `perf script`
//! output of the same file field for field (fixtures/perf/sched_small.*,
//! see fixtures/perf/README.md); the writer settings of issue 11 are in the
//! files. Also the layout rules: nothing overwritten, --flat, --tables,
//! --csv.

mod export_common;

use export_common::*;
use serde_json::Value;

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Export fixture `NAME.data` into a fresh directory and run
/// check_pyarrow.py on it against `NAME.script.txt`: the directory, the
/// Parquet root and the script's JSON.
fn export_and_check(name: &str, tag: &str) -> (std::path::PathBuf, std::path::PathBuf, Value) {
    let root = fresh_dir(tag);
    let pq = root.join("pq");
    let data = fixture(&format!("{name}.data"));
    schedscope(&[
        "export",
        data.to_str().unwrap(),
        "--parquet",
        pq.to_str().unwrap(),
    ]);
    let script = fixture(&format!("{name}.script.txt"));
    let out = py(
        "check_pyarrow.py",
        &[pq.to_str().unwrap(), script.to_str().unwrap()],
    );
    (root, pq, out)
}

#[test]
fn pyarrow_reads_every_table_and_rows_match_perf_script() {
    if !have_python(&["pyarrow"]) {
        return;
    }
    let data = fixture("perf/sched_small.data");
    let (root, pq, out) = export_and_check("perf/sched_small", "export-pyarrow");
    let rows = &out["rows"];
    let rep = report_json(&data);
    let ebn = &rep["trace"]["events_by_name"];
    let c = |name: &str| n(&ebn[name]);
    assert_eq!(n(&rows["trace"]), 1);
    assert_eq!(n(&rows["sched_switch"]), c("sched:sched_switch"));
    assert_eq!(
        n(&rows["sched_wakeup"]),
        c("sched:sched_waking") + c("sched:sched_wakeup") + c("sched:sched_wakeup_new")
    );
    assert_eq!(n(&rows["sched_migrate"]), c("sched:sched_migrate_task"));
    assert_eq!(n(&rows["tlb_flush"]), c("tlb:tlb_flush"));
    assert_eq!(
        n(&rows["ipi"]),
        c("ipi:ipi_send_cpu") + c("csd:csd_queue_cpu")
    );
    assert_eq!(
        n(&rows["raw_event"]),
        c("sched:sched_process_fork")
            + c("sched:sched_process_exit")
            + c("sched:sched_process_exec")
    );
    // Every event is in exactly one event table.
    let event_tables = [
        "sched_switch",
        "sched_wakeup",
        "sched_migrate",
        "sched_stat_runtime",
        "kvm_exit",
        "ipi",
        "tlb_flush",
        "cpu_idle",
        "softirq",
        "raw_event",
    ];
    let total: u64 = event_tables.iter().map(|t| n(&rows[*t])).sum();
    assert_eq!(total, n(&rep["trace"]["events"]));
    assert_eq!(
        out["bad_types"],
        serde_json::json!([]),
        "no unsigned or timestamp types"
    );
    // Field-for-field against perf script (every line of these kinds).
    assert_eq!(n(&out["checked"]["sched_switch"]), c("sched:sched_switch"));
    assert_eq!(
        n(&out["checked"]["sched_wakeup"]),
        c("sched:sched_waking") + c("sched:sched_wakeup") + c("sched:sched_wakeup_new")
    );
    assert_eq!(
        n(&out["checked"]["sched_migrate"]),
        c("sched:sched_migrate_task")
    );
    assert_eq!(n(&rows["sched_stat_runtime"]), 0, "none in this fixture");
    assert_eq!(n(&out["mismatch_count"]), 0, "{}", out["mismatches"]);
    // Layout and writer settings.
    let part = out["partition"].as_str().unwrap();
    assert!(part.starts_with("host=vm/date="), "{part}");
    let run = part.rsplit("run=").next().unwrap();
    assert!(
        run.parse::<f64>().is_err(),
        "run id must not be numeric: {run}"
    );
    let settings = out["settings"].as_object().unwrap();
    assert_eq!(
        settings.len(),
        rows.as_object().unwrap().len(),
        "one file per table"
    );
    for (table, s) in settings {
        assert_eq!(s["table"], table.as_str());
        assert_eq!(s["schema_version"], "3");
        assert_eq!(s["trace_id"], run);
        assert_eq!(s["format_version"], "1.0", "{table}");
        if n(&rows[table]) > 0 {
            assert_eq!(s["compression"], serde_json::json!(["ZSTD"]), "{table}");
            assert!(n(&s["max_row_group_rows"]) <= 1 << 20);
        }
        if let Some(sorted) = s.get("sorted") {
            assert_eq!(
                sorted, true,
                "{table}: rows follow the declared sorting columns"
            );
        }
        if let Some(enc) = s.get("ts_encodings").and_then(Value::as_array) {
            assert!(
                enc.iter().any(|e| e == "DELTA_BINARY_PACKED"),
                "{table}: {enc:?}"
            );
            assert!(
                !enc.iter()
                    .any(|e| e.as_str().unwrap_or("").contains("DICTIONARY")),
                "{table}: {enc:?}"
            );
            assert_eq!(s["ts_statistics"], true, "{table}");
        }
        // Every other time, duration and row id too (sched_latency.ts_run,
        // latency_ns, raw_event.event_id, ...).
        if let Some(cols) = s.get("delta_encodings").and_then(Value::as_object) {
            for (col, enc) in cols {
                let enc: Vec<&str> = enc
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                assert!(
                    enc.contains(&"DELTA_BINARY_PACKED")
                        && !enc.iter().any(|e| e.contains("DICTIONARY")),
                    "{table}.{col}: {enc:?}"
                );
            }
        }
    }
    assert!(
        settings["sched_latency"]["delta_encodings"]
            .as_object()
            .is_some_and(|c| c.contains_key("ts_run") && c.contains_key("latency_ns")),
        "{}",
        settings["sched_latency"]
    );
    assert_eq!(
        settings["sched_switch"]["sorting_columns"],
        serde_json::json!([0])
    );
    for doc in ["README.md", "schema.json"] {
        assert!(pq.join("_schedscope").join(doc).is_file(), "{doc}");
    }
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(pq.join("_schedscope/schema.json")).unwrap())
            .unwrap();
    let documented = schema["tables"].as_array().unwrap().len();
    assert_eq!(documented, settings.len(), "every table documented");
    let _ = std::fs::remove_dir_all(&root);
}

/// perf.data's counts of each event (`X.counts.txt`, made by `perf script`).
fn perf_counts(file: &str) -> std::collections::BTreeMap<String, u64> {
    std::fs::read_to_string(fixture(file))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (name, n) = l.split_once(' ')?;
            Some((name.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// `sched_stat_runtime` (comm, pid, runtime; vruntime on kernels before
/// 6.8) has a typed table: one row per event, each equal to its `perf
/// script` line field for field, and none left in raw_event/raw_arg.
#[test]
fn sched_stat_runtime_rows_match_perf_script() {
    if !have_python(&["pyarrow"]) {
        return;
    }
    let (root, _, out) = export_and_check("perf/stat_runtime", "export-stat-runtime");
    let rows = &out["rows"];
    let c = perf_counts("perf/stat_runtime.counts.txt");
    let runtime = c["sched:sched_stat_runtime"];
    assert!(runtime > 100, "the fixture has sched_stat_runtime events");
    assert_eq!(n(&rows["sched_stat_runtime"]), runtime);
    assert_eq!(n(&out["checked"]["sched_stat_runtime"]), runtime);
    assert_eq!(n(&out["mismatch_count"]), 0, "{}", out["mismatches"]);
    // Only fork and exit are left as raw events, each with its typed args.
    assert_eq!(
        n(&rows["raw_event"]),
        c["sched:sched_process_fork"] + c["sched:sched_process_exit"]
    );
    assert_eq!(
        n(&rows["raw_arg"]),
        3 * c["sched:sched_process_fork"] + 2 * c["sched:sched_process_exit"]
    );
    assert_eq!(n(&rows["sched_switch"]), c["sched:sched_switch"]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn nothing_is_overwritten_and_flat_tables_csv_work() {
    let data = fixture("perf/sched_small.data");
    let d = data.to_str().unwrap();
    let root = fresh_dir("export-layout");
    let pq = root.join("pq");
    let p = pq.to_str().unwrap();
    schedscope(&[
        "export",
        d,
        "--parquet",
        p,
        "--tables",
        "trace,sched_switch",
    ]);
    assert!(pq.join("sched_switch").is_dir() && !pq.join("thread").exists());
    let err = schedscope_fails(&[
        "export",
        d,
        "--parquet",
        p,
        "--tables",
        "trace,sched_switch",
    ]);
    assert!(err.contains("already exported"), "{err}");
    let err = schedscope_fails(&["export", d, "--parquet", p, "--tables", "nope"]);
    assert!(err.contains("unknown table \"nope\""), "{err}");
    let err = schedscope_fails(&["export", d, d, "--flat", "--parquet", p]);
    assert!(err.contains("--flat"), "{err}");
    // --flat and --csv.
    let flat = root.join("flat");
    let csv = root.join("csv");
    schedscope(&[
        "export",
        d,
        "--flat",
        "--parquet",
        flat.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(flat.join("sched_switch.parquet").is_file());
    let text = std::fs::read_to_string(csv.join("sched_switch.csv")).unwrap();
    let mut lines = text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("ts,cpu,prev_utid,prev_tid,prev_comm"));
    assert_eq!(lines.count(), 333, "one CSV line per sched_switch");
    // A comm with a space stays one field.
    assert!(
        text.contains(",lto cgu.0.rcgu.,"),
        "comms with spaces are kept"
    );
    let err = schedscope_fails(&["export", d, "--flat", "--parquet", flat.to_str().unwrap()]);
    assert!(err.contains("exists"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}
