//! The `repaired` and `repair_evidence` columns of `thread_state` and
//! `sched_slice`, read back from the Parquet files: on simulated traces
//! with this project's VM loss pattern injected (CPU 1's switches out of
//! idle missing, with and without `sched_stat_runtime`), the repaired rows
//! are exactly the timeline's repairs (`Timeline::inferred`, built apart
//! from the same file), and those placed by `sched_stat_runtime` start at
//! a switch-in the simulator really made and the injection dropped; on a
//! hand-made text trace, the three repairs known by construction; on a
//! loss-free trace, none.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use schedscope_analysis::Timeline;
use schedscope_export::{export, ExportOptions};
use schedscope_sim::loss::{drop_idle_exits, with_stat_runtime};
use schedscope_sim::model::SimData;
use schedscope_sim::{perf, simulate_bandwidth, BandwidthSpec, Simulation};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A CFS tick (HZ=250).
const TICK: u64 = 4_000_000;

/// A fresh, empty temporary directory.
fn fresh_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "schedscope-export-repaired-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A repaired row: (cpu, ts, tid, evidence).
type Repair = (i32, i64, i32, String);

/// Every batch of a Parquet file.
fn batches(file: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(file).expect("parquet file");
    ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.build())
        .expect("readable")
        .map(|b| b.expect("batch"))
        .collect()
}

/// The repaired rows of a `thread_state` or `sched_slice` file, checking
/// that `repair_evidence` is null exactly where `repaired` is false (and,
/// in `thread_state`, that repaired intervals are running ones); also the
/// number of rows.
fn repaired_rows(file: &Path, thread_state: bool) -> (BTreeSet<Repair>, usize) {
    let mut out = BTreeSet::new();
    let mut rows = 0;
    for b in batches(file) {
        let col = |n: &str| b.column_by_name(n).unwrap_or_else(|| panic!("column {n}"));
        let rep = col("repaired").as_boolean();
        let ev = col("repair_evidence").as_string::<i32>();
        let ts = col("ts").as_primitive::<Int64Type>();
        let tid = col("tid").as_primitive::<Int32Type>();
        let cpu = col("cpu").as_primitive::<Int32Type>();
        for i in 0..b.num_rows() {
            rows += 1;
            assert!(!rep.is_null(i), "repaired is never null");
            if !rep.value(i) {
                assert!(ev.is_null(i), "{}: row {i} not repaired", file.display());
                continue;
            }
            if thread_state {
                let state = col("state").as_string::<i32>();
                assert_eq!(state.value(i), "running", "{}", file.display());
            }
            assert!(
                out.insert((
                    cpu.value(i),
                    ts.value(i),
                    tid.value(i),
                    ev.value(i).to_string()
                )),
                "one row per repair"
            );
        }
    }
    (out, rows)
}

/// Export `input` (thread_state and sched_slice, flat Parquet) and return
/// the repaired rows of both tables.
fn exported(input: &Path, tag: &str) -> (BTreeSet<Repair>, BTreeSet<Repair>) {
    let out = fresh_dir(&format!("out-{tag}"));
    let mut trace = schedscope_parser::load(input).expect("decode");
    let opts = ExportOptions {
        parquet: Some(out.clone()),
        flat: true,
        tables: Some(vec!["thread_state".into(), "sched_slice".into()]),
        ..Default::default()
    };
    export(&mut trace, input, &opts).expect("export");
    let (states, n) = repaired_rows(&out.join("thread_state.parquet"), true);
    let (slices, m) = repaired_rows(&out.join("sched_slice.parquet"), false);
    assert!(n > 0 && m > 0, "{tag}: rows written");
    let _ = std::fs::remove_dir_all(&out);
    (states, slices)
}

/// The timeline's repairs of `input`, as rows: all of them (each starts a
/// CPU run, a `sched_slice` row), and those that start a Running interval
/// of their task (a `thread_state` row). A repair placed at the instant
/// its task left the same CPU (the rule, for a task preempted to idle and
/// switched in again untraced) continues the Running interval before it:
/// the timeline keeps no zero-length Runnable interval between them, so
/// such a repair starts no interval; it must lie inside one.
fn timeline_repairs(input: &Path) -> (BTreeSet<Repair>, BTreeSet<Repair>) {
    let tl = Timeline::build(&schedscope_parser::load(input).expect("decode"));
    let row = |r: &schedscope_analysis::timeline::InferredSwitchIn| {
        (
            r.cpu.0 as i32,
            r.ts.0 as i64,
            r.tid.0,
            r.evidence.name().to_string(),
        )
    };
    let mut starts = BTreeSet::new();
    for r in &tl.inferred {
        let th = tl.thread(r.tid).expect("a repaired task has a timeline");
        let running = |iv: &schedscope_analysis::StateInterval| {
            iv.state == schedscope_analysis::ThreadState::Running && iv.cpu == Some(r.cpu)
        };
        if th.intervals.iter().filter(running).any(|iv| iv.ts == r.ts) {
            starts.insert(row(r));
        } else {
            assert!(
                th.intervals
                    .iter()
                    .filter(running)
                    .any(|iv| iv.ts < r.ts && iv.end.is_none_or(|e| e > r.ts)),
                "{r:?} is inside a Running interval"
            );
        }
    }
    (tl.inferred.iter().map(row).collect(), starts)
}

/// `sim` written as perf.data into `dir`.
fn write(sim: &Simulation, dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, perf::to_perf_data(sim).expect("perf.data")).expect("write");
    p
}

#[test]
fn repaired_rows_are_the_timelines_repairs() {
    let dir = fresh_dir("in");
    let (base, _) = simulate_bandwidth(&BandwidthSpec::old_kernel(1));
    let stat = with_stat_runtime(&base, TICK);
    for (name, sim) in [("vm", &base), ("vm+stat", &stat)] {
        let lossy = drop_idle_exits(sim, 1).0;
        let input = write(&lossy, &dir, &format!("{name}.data"));
        let (want, starts) = timeline_repairs(&input);
        assert!(!want.is_empty(), "{name}: the loss was repaired");
        let (states, slices) = exported(&input, name);
        assert_eq!(slices, want, "{name}: sched_slice");
        assert_eq!(states, starts, "{name}: thread_state");
        assert!(!starts.is_empty(), "{name}");
        // only on the CPU that lost events
        assert!(want.iter().all(|r| r.0 == 1), "{name}: {want:?}");
        // the switch-ins the injection dropped, from the simulator's own
        // events: placed by sched_stat_runtime, a repair is one of them
        let dropped: BTreeSet<(i64, i32)> = sim
            .events
            .iter()
            .filter(|e| e.cpu == 1)
            .filter_map(|e| match e.data {
                SimData::Switch { prev: 0, next, .. } if next != 0 => Some((e.ts as i64, next)),
                _ => None,
            })
            .collect();
        let by_stat: Vec<&Repair> = states.iter().filter(|r| r.3 == "stat_runtime").collect();
        if name == "vm+stat" {
            assert!(!by_stat.is_empty(), "{name}: {states:?}");
        } else {
            assert!(by_stat.is_empty(), "{name}: {states:?}");
        }
        for r in by_stat {
            assert!(
                dropped.contains(&(r.1, r.2)),
                "{name}: {r:?} is a dropped switch-in"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_loss_free_trace_has_no_repaired_rows() {
    let dir = fresh_dir("clean");
    let (base, _) = simulate_bandwidth(&BandwidthSpec::old_kernel(1));
    for (name, sim) in [
        ("clean", base.clone()),
        ("clean+stat", with_stat_runtime(&base, TICK)),
    ] {
        let input = write(&sim, &dir, &format!("{name}.data"));
        let (states, slices) = exported(&input, name);
        assert!(states.is_empty() && slices.is_empty(), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The hand-made trace of `fixtures/repairs/` (its README gives the three
/// repairs it holds, each known by construction).
const HAND_MADE: &str = include_str!("../../../fixtures/repairs/hand-made.txt");

#[test]
fn a_hand_made_trace_has_its_three_repairs() {
    let dir = fresh_dir("hand");
    let input = dir.join("hand.txt");
    std::fs::write(&input, HAND_MADE).expect("write");
    let at = |us: i64| 100_000_000_000 + us * 1000;
    let want: BTreeSet<Repair> = [
        (1, at(2000), 101, "rule"),
        (1, at(11000), 102, "cpu_idle"),
        (1, at(21000), 103, "task_event"),
    ]
    .into_iter()
    .map(|(c, ts, tid, e)| (c, ts, tid, e.to_string()))
    .collect();
    let (states, slices) = exported(&input, "hand");
    assert_eq!(states, want);
    assert_eq!(slices, want);
    let _ = std::fs::remove_dir_all(&dir);
}
