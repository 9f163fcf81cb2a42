//! DuckDB, DataFusion and Spark (pyspark, local mode) read the same export
//! root of three traces, discover the host/date/run partitions themselves
//! and run docs/export.md's fleet query (wasted idle % per host and run); each
//! engine's numbers equal `report --all --format json` of every file.

mod export_common;

use export_common::*;
use std::path::PathBuf;
use std::sync::OnceLock;

const TRACES: [&str; 3] = [
    "idle/capped.data",
    "sim/mixed-s1.data",
    "perf/sched_small.data",
];

/// One export root shared by the engine tests of this binary.
fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let pq = fresh_dir("export-engines").join("pq");
        let files: Vec<String> = TRACES
            .iter()
            .map(|t| fixture(t).to_str().unwrap().to_string())
            .collect();
        let mut args = vec!["export"];
        args.extend(files.iter().map(String::as_str));
        args.extend(["--parquet", pq.to_str().unwrap()]);
        schedscope(&args);
        pq
    })
}

fn check(engine: &str) {
    let out = py("fleet.py", &[engine, root().to_str().unwrap()]);
    let rows = out["rows"].as_array().unwrap();
    assert_eq!(rows.len(), TRACES.len(), "{engine}: one row per run: {out}");
    let mut hosts: Vec<&str> = rows.iter().map(|r| r[0].as_str().unwrap()).collect();
    hosts.dedup();
    assert_eq!(
        hosts,
        vec!["schedscope-sim", "vm"],
        "{engine}: host partitions"
    );
    let mut wasted_total = 0;
    for r in rows {
        assert!(
            r[1].as_str().unwrap().starts_with('r'),
            "{engine}: run id {r}"
        );
        let path = r[2].as_str().unwrap();
        let rep = report_json(std::path::Path::new(path));
        let t = &rep["trace"];
        let wasted = rep["idle"]["wasted_idle_ns"].as_u64().unwrap();
        let span = t["end_ns"].as_u64().unwrap() - t["start_ns"].as_u64().unwrap();
        let cpus = t["cpus"].as_u64().unwrap();
        assert_eq!(r[3].as_u64(), Some(wasted), "{engine} {path}: wasted ns");
        assert_eq!(r[4].as_u64(), Some(span), "{engine} {path}: span");
        assert_eq!(r[5].as_u64(), Some(cpus), "{engine} {path}: cpus");
        let pct = wasted as f64 * 100.0 / (span as f64 * cpus as f64);
        let got = r[6].as_f64().unwrap();
        assert!(
            (got - pct).abs() <= 1e-9 * pct.max(1.0),
            "{engine} {path}: {got} vs {pct}"
        );
        wasted_total += wasted;
    }
    assert!(wasted_total > 0, "the capped trace has wasted idle");
}

#[test]
fn duckdb_fleet_query() {
    if have_python(&["duckdb"]) {
        check("duckdb");
    }
}

#[test]
fn datafusion_fleet_query() {
    if have_python(&["datafusion"]) {
        check("datafusion");
    }
}

#[test]
fn spark_fleet_query() {
    if have_python(&["pyspark"]) {
        check("spark");
    }
}
