//! DuckDB over an export of several traces (hive partitioning and nothing
//! else): one SQL query per analysis table reproduces the figure of
//! `report --all --format json` on the same file.
//!
//! Traces: fixtures/idle/capped.data (wasted idle under CFS bandwidth),
//! fixtures/sim/mixed-s1.data (generated: PLE exits, VM and process gangs),
//! fixtures/perf/sched_small.data (a real perf recording).

mod export_common;

use export_common::*;
use serde_json::{json, Value};
use std::collections::HashMap;

const TRACES: [&str; 3] = [
    "idle/capped.data",
    "sim/mixed-s1.data",
    "perf/sched_small.data",
];

/// Rows of one query keyed by their first columns (the path and, when
/// `key_cols` is 2, an entity).
fn keyed(rows: &Value, key_cols: usize) -> HashMap<String, Vec<Value>> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let r = r.as_array().unwrap();
            let key = r[..key_cols]
                .iter()
                .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join("|");
            (key, r[key_cols..].to_vec())
        })
        .collect()
}

/// p50 and p99 (nearest rank) of the waits behind `delay_*` (kind other
/// than `preempted`) per trace and `entity` (an expression of `l`).
fn pct_sql(entity: &str) -> String {
    format!(
        "WITH k AS (SELECT t.path, {entity} AS e, l.latency_ns AS v,
                           row_number() OVER (PARTITION BY t.path, {entity} ORDER BY l.latency_ns) AS rn,
                           count(*) OVER (PARTITION BY t.path, {entity}) AS n
                    FROM @sched_latency l JOIN @trace t ON l.run = t.trace_id
                    WHERE l.kind <> 'preempted')
         SELECT path, e, max(v) FILTER (WHERE rn = (n * 50 + 99) // 100),
                max(v) FILTER (WHERE rn = (n * 99 + 99) // 100)
         FROM k GROUP BY ALL"
    )
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| v.as_f64().map_or(0, |f| f as u64))
}

#[test]
fn duckdb_queries_reproduce_the_report() {
    if !have_python(&["duckdb"]) {
        return;
    }
    let root = fresh_dir("export-duckdb");
    let pq = root.join("pq");
    let files: Vec<String> = TRACES
        .iter()
        .map(|t| fixture(t).to_str().unwrap().to_string())
        .collect();
    let mut args = vec!["export"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--parquet", pq.to_str().unwrap()]);
    schedscope(&args);

    let queries = json!({
        "runs": "SELECT count(DISTINCT run), count(DISTINCT host) FROM @sched_switch",
        "idle": "SELECT t.path, sum(g.dur), sum(g.throttled_ns), sum(g.imbalance_ns), count(*)
                 FROM @idle_gap g JOIN @trace t ON g.run = t.trace_id GROUP BY ALL",
        "ple": "SELECT t.path, p.class, count(*) FROM @ple_exit p JOIN @trace t ON p.run = t.trace_id GROUP BY ALL",
        "latency": "SELECT t.path, l.tid,
                        max(latency_ns) FILTER (WHERE kind <> 'preempted'),
                        count(*) FILTER (WHERE kind <> 'preempted'),
                        sum(latency_ns) FILTER (WHERE kind <> 'preempted'),
                        count(*) FILTER (WHERE kind = 'preempted'),
                        max(latency_ns) FILTER (WHERE kind = 'preempted')
                    FROM @sched_latency l JOIN @trace t ON l.run = t.trace_id GROUP BY ALL",
        "fragmented": "SELECT t.path, e.gang, sum(e.dur) FROM @gang_episode e JOIN @trace t ON e.run = t.trace_id GROUP BY ALL",
        "corun": "SELECT t.path, g.gang, g.corun_ratio FROM @gang_summary g JOIN @trace t ON g.run = t.trace_id",
        "running": "SELECT t.path, s.tid, sum(coalesce(s.dur, t.ts_end - s.ts))
                    FROM @thread_state s JOIN @trace t ON s.run = t.trace_id
                    WHERE s.state = 'running' GROUP BY ALL",
        "metric": "SELECT t.path, m.value FROM @summary_metric m JOIN @trace t ON m.run = t.trace_id
                   WHERE m.section = 'idle' AND m.metric = 'wasted_idle' AND m.stat = 'total'",
        // Nearest-rank p50 / p99 of the waits (rank ceil(p/100 * n)), per
        // task and over the whole trace.
        "task_pct": pct_sql("l.tid"),
        "trace_pct": pct_sql("0"),
        "metric_pct": "SELECT t.path, m.stat, m.value FROM @summary_metric m JOIN @trace t ON m.run = t.trace_id
                       WHERE m.section = 'latency' AND m.metric = 'delay' AND m.entity_kind = 'trace'
                         AND m.stat IN ('p50', 'p99')",
    });
    let r = duckdb(&pq, &queries);

    assert_eq!(
        r["runs"],
        json!([[3, 2]]),
        "three runs on two hosts discovered"
    );
    let idle = keyed(&r["idle"], 1);
    let ple = keyed(&r["ple"], 2);
    let lat = keyed(&r["latency"], 2);
    let frag = keyed(&r["fragmented"], 2);
    let corun = keyed(&r["corun"], 2);
    let running = keyed(&r["running"], 2);
    let metric = keyed(&r["metric"], 1);
    let task_pct = keyed(&r["task_pct"], 2);
    let trace_pct = keyed(&r["trace_pct"], 2);
    let metric_pct = keyed(&r["metric_pct"], 2);
    let (mut wasted_seen, mut ple_seen, mut gangs_seen, mut waits_seen) = (0, 0, 0, 0);
    for path in &files {
        let rep = report_json(std::path::Path::new(path));
        // idle_gap: sum of gaps = idle.wasted_idle_ns (and its split).
        let i = &rep["idle"];
        let row = idle.get(path).cloned().unwrap_or_else(|| vec![json!(0); 4]);
        assert_eq!(u(&row[0]), u(&i["wasted_idle_ns"]), "{path}: wasted idle");
        assert_eq!(u(&row[1]), u(&i["throttled_ns"]), "{path}: throttled");
        assert_eq!(u(&row[2]), u(&i["imbalance_ns"]), "{path}: imbalance");
        assert_eq!(u(&row[3]), u(&i["gaps"]["count"]), "{path}: gap count");
        assert_eq!(
            u(&metric[path][0]),
            u(&i["wasted_idle_ns"]),
            "{path}: summary_metric"
        );
        wasted_seen += u(&i["wasted_idle_ns"]);
        // ple_exit: classification counts = lhp.ple.
        if let Some(p) = rep["lhp"]["ple"]
            .as_object()
            .filter(|p| p.contains_key("total"))
        {
            for class in ["sibling_preempted", "all_running", "siblings_idle"] {
                let got = ple.get(&format!("{path}|{class}")).map_or(0, |r| u(&r[0]));
                assert_eq!(got, u(&p[class]), "{path}: ple {class}");
            }
            ple_seen += u(&p["total"]);
        }
        // sched_latency: per task max / count / sum = latency.tasks[].
        for t in rep["latency"]["tasks"].as_array().unwrap() {
            let key = format!("{path}|{}", t["tid"]);
            let row = lat.get(&key).cloned().unwrap_or_else(|| vec![json!(0); 5]);
            assert_eq!(u(&row[0]), u(&t["delay_max_ns"]), "{key}: delay_max_ns");
            assert_eq!(u(&row[1]), u(&t["switches"]), "{key}: switches");
            assert_eq!(u(&row[2]), u(&t["delay_total_ns"]), "{key}: delay_total_ns");
            assert_eq!(u(&row[3]), u(&t["preemptions"]), "{key}: preemptions");
            assert_eq!(
                u(&row[4]),
                u(&t["preempt_delay_max_ns"]),
                "{key}: preempt max"
            );
            if u(&t["switches"]) > 0 {
                let p = &task_pct[&key];
                assert_eq!(u(&p[0]), u(&t["delay_p50_ns"]), "{key}: delay_p50_ns");
                assert_eq!(u(&p[1]), u(&t["delay_p99_ns"]), "{key}: delay_p99_ns");
            }
            waits_seen += u(&t["switches"]);
        }
        // summary_metric: the trace's latency p50 / p99 over every wait.
        if let Some(p) = trace_pct.get(&format!("{path}|0")) {
            for (i, stat) in ["p50", "p99"].iter().enumerate() {
                let m = &metric_pct[&format!("{path}|{stat}")];
                assert_eq!(u(&m[0]), u(&p[i]), "{path}: latency delay {stat}");
            }
        }
        // gang_episode / gang_summary / thread_state: per gang.
        for g in rep["gang"]["gangs"].as_array().into_iter().flatten() {
            let key = format!("{path}|{}", g["name"].as_str().unwrap());
            assert_eq!(
                frag.get(&key).map_or(0, |r| u(&r[0])),
                u(&g["fragmented_ns"]),
                "{key}: fragmented"
            );
            assert_eq!(
                corun[&key][0].as_f64(),
                g["corun_ratio"].as_f64(),
                "{key}: corun"
            );
            for (m, ns) in g["members"]
                .as_array()
                .unwrap()
                .iter()
                .zip(g["member_running_ns"].as_array().unwrap())
            {
                let k = format!("{path}|{m}");
                assert_eq!(
                    running.get(&k).map_or(0, |r| u(&r[0])),
                    u(ns),
                    "{k}: running"
                );
            }
            gangs_seen += 1;
        }
    }
    assert!(wasted_seen > 0 && ple_seen > 0 && gangs_seen > 0 && waits_seen > 0);
    let _ = std::fs::remove_dir_all(&root);
}
