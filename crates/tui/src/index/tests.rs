//! The lane index against brute-force scans of the same runs.

use super::*;

/// Brute-force summary of a cell, the oracle for [`CpuLane::cell`].
fn brute(runs: &[(u64, u64, Tid)], a: u64, b: u64) -> (u64, Option<Tid>, bool) {
    let mut t = Tally::default();
    let mut busy = 0;
    for &(s, e, tid) in runs {
        let ov = e.min(b).saturating_sub(s.max(a));
        if tid != 0 {
            busy += ov;
        }
        t.add(tid, ov as f64);
    }
    let top = t.top();
    (busy, top.map(|x| x.0), top.is_some_and(|x| x.2))
}

fn runs(n: u64) -> Vec<(u64, u64, Tid)> {
    // deterministic pseudo-random lengths and tasks, idle in between
    let mut v = Vec::new();
    let mut t = 1000;
    let mut x: u64 = 12345;
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 1 + (x >> 33) % 500;
        let tid = ((x >> 20) % 4) as i32; // 0 = idle
        v.push((t, t + len, tid));
        t += len + (x >> 50) % 3;
    }
    v
}

#[test]
fn busy_time_is_exact_at_any_cell() {
    let r = runs(5000);
    let lane = CpuLane::new(0, &r, &[], |t| t);
    let end = r.last().unwrap().1;
    for (a, b) in [
        (0, end + 10),
        (1500, 1501),
        (1003, 80_000),
        (777, 777),
        (5000, 5100),
    ] {
        let (busy, _, _) = brute(&r, a, b);
        assert_eq!(lane.busy_ns(a, b), busy, "[{a},{b})");
    }
    let mut a = 900;
    while a < end {
        let b = a + 997;
        assert_eq!(lane.busy_ns(a, b), brute(&r, a, b).0, "[{a},{b})");
        a = b;
    }
}

#[test]
fn small_cells_are_exact_and_idle_is_the_rest() {
    let r = runs(2000);
    let lane = CpuLane::new(0, &r, &[], |t| t);
    let mut a = 1000;
    while a < 200_000 {
        let b = a + 1500; // a few runs per cell: exact path
        let (busy, task, several) = brute(&r, a, b);
        let c = lane.cell(a, b);
        assert_eq!(c.task, task, "[{a},{b})");
        assert_eq!(c.several, several, "[{a},{b})");
        assert!((c.busy - busy as f64 / 1500.0).abs() < 1e-12);
        let covered: u64 = r
            .iter()
            .map(|&(s, e, _)| e.min(b).saturating_sub(s.max(a)))
            .sum();
        assert_eq!(lane.idle_ns(a, b), covered - busy);
        a = b;
    }
}

#[test]
fn wide_cells_use_the_mipmap_and_find_a_dominant_task() {
    // task 7 runs 90% of the time in short slices, task 8 the rest
    let mut r = Vec::new();
    for i in 0..100_000u64 {
        let t = i * 100;
        r.push((t, t + 90, 7));
        r.push((t + 90, t + 100, 8));
    }
    let lane = CpuLane::new(0, &r, &[], |t| t);
    for (a, b) in [(0, 10_000_000), (123_456, 5_000_000), (0, 100_000)] {
        let c = lane.cell(a, b);
        assert_eq!(c.task, Some(7));
        assert!(c.several);
        assert!((c.busy - 1.0).abs() < 1e-12);
    }
}

#[test]
fn wide_cells_only_name_tasks_and_processes_that_ran_in_them() {
    // 60 tasks in 12 processes, in runs of random lengths with idle
    // gaps; a task runs only in its own stretch of the trace, so that
    // a cell summarised from buckets reaching outside it would name
    // tasks that did not run in it
    let mut r = Vec::new();
    let mut t = 0u64;
    let mut x: u64 = 99;
    for i in 0..200_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 1 + (x >> 33) % 300;
        let tid = ((i / 3000) % 60) as i32 * 10 + ((x >> 20) % 3) as i32 + 1;
        let tid = if (x >> 40).is_multiple_of(5) { 0 } else { tid };
        r.push((t, t + len, tid));
        t += len + (x >> 50) % 4;
    }
    let process = |t: Tid| t / 50 + 1;
    let lane = CpuLane::new(0, &r, &[], process);
    let end = t;
    let mut checked = 0;
    for cols in [7u64, 64, 200, 1000] {
        for i in 0..cols {
            let (a, b) = (end * i / cols + 13, end * (i + 1) / cols + 13);
            let c = lane.cell(a, b);
            let i0 = r.partition_point(|run| run.1 <= a);
            let ran: Vec<Tid> = r[i0..]
                .iter()
                .take_while(|run| run.0 < b)
                .filter(|&&(s, e, tid)| tid != 0 && e.min(b) > s.max(a))
                .map(|&(_, _, tid)| tid)
                .collect();
            let (Some(task), Some(p)) = (c.task, c.process) else {
                assert!(ran.is_empty(), "[{a},{b})");
                continue;
            };
            assert!(ran.contains(&task), "[{a},{b}) {task}");
            assert!(ran.iter().any(|&t| process(t) == p), "[{a},{b}) {p}");
            assert_eq!(c.several, ran.iter().any(|&t| t != ran[0]), "[{a},{b})");
            checked += 1;
        }
    }
    assert!(checked > 1000);
}

#[test]
fn the_dominant_process_sums_its_tasks_time() {
    // Per 100 ns: tasks 1 and 2 of process 10 run 20 ns each, task 3
    // (its own process) 30 ns, then 30 ns idle. Task 3 is the dominant
    // task (30 > 20), process 10 the dominant process (40 > 30); busy
    // is 70%. Cells of one period use the exact path, cells of
    // thousands of periods the mipmap: both must agree.
    let mut r = Vec::new();
    for i in 0..50_000u64 {
        let t = i * 100;
        r.push((t, t + 20, 1));
        r.push((t + 20, t + 40, 2));
        r.push((t + 40, t + 70, 3));
        r.push((t + 70, t + 100, 0));
    }
    let lane = CpuLane::new(0, &r, &[], |t| if t <= 2 { 10 } else { t });
    for (a, b) in [(0, 100), (500, 600), (0, 5_000_000), (12_300, 4_012_300)] {
        let c = lane.cell(a, b);
        assert_eq!(c.task, Some(3), "[{a},{b})");
        assert_eq!(c.process, Some(10), "[{a},{b})");
        assert!(c.several);
        assert!((c.busy - 0.7).abs() < 1e-9, "[{a},{b}) {}", c.busy);
    }
    let c = lane.census(0, 1000);
    assert_eq!(
        c,
        Census {
            tasks: 3,
            process: Some((10, 400))
        }
    );
    assert_eq!(lane.census(20, 110).tasks, 3);
    assert_eq!(lane.census(45, 95).tasks, 1);
    assert_eq!(lane.census(75, 95), Census::default());
    // idle alone: no task, no process
    let c = lane.cell(75, 95);
    assert_eq!((c.task, c.process, c.busy), (None, None, 0.0));
}

#[test]
fn pressure_mean_is_the_integral_over_the_cell() {
    let p = Pressure::from_intervals(&[(10, 30), (20, 40), (20, 25)]);
    assert_eq!(p.count_at(15), 1);
    assert_eq!(p.count_at(22), 3);
    assert_eq!(p.count_at(45), 0);
    // [10,40): 1*10 + 3*5 + 2*5 + 1*10 = 45 task-ns over 30 ns
    assert!((p.mean(10, 40) - 1.5).abs() < 1e-12);
    assert!((p.mean(0, 10)).abs() < 1e-12);
}
