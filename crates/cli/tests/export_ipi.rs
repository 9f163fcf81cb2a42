//! DuckDB over the `ipi_request` table of an export of two traces with IPI
//! events (hive partitioning and nothing else): per class, the request
//! count and the delivery / handler statistics (count, mean, nearest-rank
//! p50 and p99, max) recomputed in SQL from the rows equal
//! `report --tlb --format json`'s `tlb.ipi_classes`.
//!
//! Traces: fixtures/tlb/tracefs-tlb.txt (tracefs text, csd/ipi/tlb events
//! of a munmap-heavy workload) and fixtures/perf/callchain.data (a real perf
//! recording).

mod export_common;

use export_common::*;
use serde_json::{json, Value};
use std::collections::HashMap;

const TRACES: [&str; 2] = ["tlb/tracefs-tlb.txt", "perf/callchain.data"];

/// The statistics of one sample column (`delivery_ns` or `handler_ns`)
/// per trace and class: n, max, floor of the mean, p50, p99 (nearest rank:
/// the value at rank ceil(p/100 * n)).
fn stats_sql(col: &str) -> String {
    format!(
        "WITH d AS (SELECT t.path, r.class, unnest(r.{col}) AS v
                    FROM @ipi_request r JOIN @trace t ON r.run = t.trace_id),
              k AS (SELECT path, class, v,
                           row_number() OVER (PARTITION BY path, class ORDER BY v) AS rn,
                           count(*) OVER (PARTITION BY path, class) AS n FROM d)
         SELECT path, class, max(n), max(v), sum(v) // max(n),
                max(v) FILTER (WHERE rn = (n * 50 + 99) // 100),
                max(v) FILTER (WHERE rn = (n * 99 + 99) // 100)
         FROM k GROUP BY ALL"
    )
}

fn keyed(rows: &Value) -> HashMap<String, Vec<u64>> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let r = r.as_array().unwrap();
            let key = format!("{}|{}", r[0].as_str().unwrap(), r[1].as_str().unwrap());
            let vals = r[2..]
                .iter()
                .map(|v| v.as_u64().unwrap_or_else(|| v.as_f64().unwrap() as u64))
                .collect();
            (key, vals)
        })
        .collect()
}

#[test]
fn duckdb_ipi_requests_reproduce_the_tlb_report() {
    if !have_python(&["duckdb"]) {
        return;
    }
    let root = fresh_dir("export-ipi");
    let pq = root.join("pq");
    let files: Vec<String> = TRACES
        .iter()
        .map(|t| fixture(t).to_str().unwrap().to_string())
        .collect();
    let mut args = vec!["export", "--tables", "trace,ipi_request"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--parquet", pq.to_str().unwrap()]);
    schedscope(&args);

    let queries = json!({
        "count": "SELECT t.path, r.class, count(*), sum(r.target_count), sum(r.ipis)
                  FROM @ipi_request r JOIN @trace t ON r.run = t.trace_id GROUP BY ALL",
        "delivery": stats_sql("delivery_ns"),
        "handler": stats_sql("handler_ns"),
    });
    let r = duckdb(&pq, &queries);
    let count = keyed(&r["count"]);
    let delivery = keyed(&r["delivery"]);
    let handler = keyed(&r["handler"]);

    let (mut classes, mut deliveries, mut handlers) = (0, 0, 0);
    for path in &files {
        let rep = report_json(std::path::Path::new(path));
        let listed = rep["tlb"]["ipi_classes"].as_array().unwrap();
        // Every class in the table is in the report and vice versa.
        let in_table = count.keys().filter(|k| k.starts_with(&format!("{path}|")));
        assert_eq!(in_table.count(), listed.len(), "{path}: classes");
        for c in listed {
            let class = c["class"].as_str().unwrap();
            let key = format!("{path}|{class}");
            let row = &count[&key];
            assert_eq!(row[0], c["count"].as_u64().unwrap(), "{key}: requests");
            assert_eq!(row[1], c["targets"].as_u64().unwrap(), "{key}: targets");
            assert_eq!(row[2], c["ipis_sent"].as_u64().unwrap(), "{key}: ipis_sent");
            classes += 1;
            for (name, table, seen) in [
                ("delivery", &delivery, &mut deliveries),
                ("handler", &handler, &mut handlers),
            ] {
                let want = &c[name];
                let Some(got) = table.get(&key) else {
                    assert!(
                        want.is_null(),
                        "{key}: {name} in the report, not in the table"
                    );
                    continue;
                };
                assert_eq!(
                    got[0],
                    want["count"].as_u64().unwrap(),
                    "{key}: {name} count"
                );
                assert_eq!(
                    got[1],
                    want["max_ns"].as_u64().unwrap(),
                    "{key}: {name} max"
                );
                assert_eq!(
                    got[2],
                    want["mean_ns"].as_u64().unwrap(),
                    "{key}: {name} mean"
                );
                assert_eq!(
                    got[3],
                    want["p50_ns"].as_u64().unwrap(),
                    "{key}: {name} p50"
                );
                assert_eq!(
                    got[4],
                    want["p99_ns"].as_u64().unwrap(),
                    "{key}: {name} p99"
                );
                *seen += got[0];
            }
        }
    }
    // The fixtures do have requests with deliveries and handler runs.
    assert!(
        classes >= 2 && deliveries > 0 && handlers > 0,
        "{classes} {deliveries} {handlers}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
