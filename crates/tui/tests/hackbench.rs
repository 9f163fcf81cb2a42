//! The whole-trace view on a busy real recording (issue 24, point 3): a
//! hackbench run (`perf bench sched messaging`, 160 processes on this
//! machine's CPUs) recorded by the test with perf, drawn at zoom 1 into a
//! TestBackend buffer, every CPU lane cell checked against the timeline's
//! runs summed by brute force:
//! * the glyph is the busy fraction in eighths, exactly (`▁`..`█`, braille
//!   dots where repaired runs hold at least half the busy time; never
//!   the old `▒` "shared" mark that covered every cell of such a trace);
//! * its colour is that of a process that ran in the cell, and the
//!   screen shows several colours;
//! * zoomed in until cells hold a few runs, the colour is the process with
//!   the most time in the cell;
//! * the detail line counts the distinct tasks of the cursor's cell.
//!
//! Needs root and perf; skips with a message otherwise.

mod common;

use common::{buffer, screen};
use ratatui::style::Color;
use schedscope_testkit as testkit;
use schedscope_tui::draw::colour;
use schedscope_tui::{App, Data};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const EVENTS: &str = "sched:sched_switch,sched:sched_wakeup,sched:sched_waking,\
sched:sched_wakeup_new,sched:sched_migrate_task,sched:sched_process_fork,\
sched:sched_process_exit,sched:sched_process_exec";

/// Record hackbench, or say why not.
fn record() -> Result<std::path::PathBuf, String> {
    if !testkit::proc_self_owned_by_root() {
        return Err("not root".into());
    }
    if !testkit::perf_works() {
        return Err("perf not installed".into());
    }
    let dir = testkit::tmpdir("tui-hackbench");
    let data = dir.join("hackbench.data");
    let out = Command::new("perf")
        .args(["record", "-q", "-a", "-e", EVENTS, "-o"])
        .arg(&data)
        .args([
            "--",
            "perf",
            "bench",
            "sched",
            "messaging",
            "-g",
            "4",
            "-l",
            "100",
        ])
        .output()
        .map_err(|e| format!("perf record: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "perf record failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(data)
}

/// The block of `frac` eighths as the lanes draw it (ceil, at least one).
fn eighths(frac: f64) -> &'static str {
    const E: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
    if frac <= 0.0 {
        return E[0];
    }
    E[((frac * 8.0).ceil() as usize).clamp(1, 8)]
}

/// Brute force over the timeline's runs of CPU `c` in `[a, b)`: busy ns,
/// ns per process, distinct tasks.
fn truth(d: &Data, c: usize, a: u64, b: u64) -> (u64, BTreeMap<i32, u64>, BTreeSet<i32>) {
    let end = d.timeline.end.0;
    let (mut busy, mut per, mut tasks) = (0, BTreeMap::new(), BTreeSet::new());
    for r in &d.timeline.cpus[c] {
        let (s, e) = (r.ts.0, r.end.map_or(end, |e| e.0));
        let ov = e.min(b).saturating_sub(s.max(a));
        if r.tid.0 == 0 || ov == 0 {
            continue;
        }
        busy += ov;
        *per.entry(d.colour_key(r.tid.0)).or_insert(0) += ov;
        tasks.insert(r.tid.0);
    }
    (busy, per, tasks)
}

/// The glyph of CPU `c`'s cell `[a, b)` holding `busy` ns of runs: the
/// busy fraction in eighths, dotted where repaired runs hold at least half
/// the busy time (this VM's CPU 1 loses its switches out of idle).
fn glyph(d: &Data, c: usize, a: u64, b: u64, busy: u64) -> String {
    let frac = busy as f64 / (b - a) as f64;
    let repaired = repaired_in(d, c, a, b);
    if repaired > 0 && repaired * 2 >= busy {
        schedscope_tui::draw::dotted(frac).to_string()
    } else {
        eighths(frac).to_string()
    }
}

/// The busy time in `[a, b)` of CPU `c`'s runs whose switch-in a lost-event
/// repair placed (the timeline's own repairs, not the lane index).
fn repaired_in(d: &Data, c: usize, a: u64, b: u64) -> u64 {
    let end = d.timeline.end.0;
    d.timeline.cpus[c]
        .iter()
        .filter(|r| r.tid.0 != 0)
        .filter(|r| {
            d.timeline
                .repair_at(schedscope_trace::Cpu(c as u32), r.tid, r.ts)
                .is_some()
        })
        .map(|r| {
            r.end
                .map_or(end, |e| e.0)
                .min(b)
                .saturating_sub(r.ts.0.max(a))
        })
        .sum()
}

/// The screen rows of the CPU lanes: (cpu, y) (not the detail and
/// status lines at the bottom).
fn cpu_rows(s: &[String]) -> Vec<(usize, u16)> {
    s.iter()
        .take(s.len().saturating_sub(2))
        .enumerate()
        .filter_map(|(y, l)| {
            let c = l
                .strip_prefix("CPU")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((c, y as u16))
        })
        .collect()
}

#[test]
fn busy_trace_overview_shows_load_and_main_process_at_every_zoom() {
    let data = match record() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    let trace = schedscope_parser::load(&data).expect("recording loads");
    let mut app = App::with_data(
        &data.to_string_lossy(),
        Data::from_trace(trace, &|_| {}),
        false,
    );
    let (w, h) = (120u16, 30u16);
    let s = screen(&mut app, w, h);
    let rows = cpu_rows(&s);
    let ncpu = app.data().expect("loaded").lanes.cpus.len();
    assert_eq!(rows.len(), ncpu, "{}", s.join("\n"));
    let buf = buffer(&mut app, w, h);
    let d = app.data().expect("loaded");
    let cols = app.columns;
    assert_eq!(cols, w - 8);
    let mut colours = BTreeSet::new();
    let mut several = 0;
    for &(c, y) in &rows {
        for i in 0..cols {
            let (a, b) = app.view.col_range(i, cols);
            let (busy, per, tasks) = truth(d, c, a, b);
            let cell = &buf[(8 + i, y)];
            let at = format!("CPU{c} column {i} [{a}, {b})");
            let repaired = repaired_in(d, c, a, b);
            assert_eq!(
                cell.symbol(),
                glyph(d, c, a, b, busy),
                "{at}: busy {busy}, repaired {repaired}"
            );
            if busy == 0 {
                continue;
            }
            several += usize::from(tasks.len() > 1);
            // the colour of a process that ran there
            let fg = cell.fg;
            assert!(matches!(fg, Color::Rgb(..)), "{at}: {fg:?}");
            assert!(
                per.keys().any(|&p| colour(p) == fg),
                "{at}: {fg:?} is no colour of the {} processes that ran",
                per.len()
            );
            colours.insert(format!("{fg:?}"));
        }
    }
    // a busy trace: cells shared by several tasks, told apart by colour
    assert!(several > usize::from(cols), "{several} shared cells");
    assert!(colours.len() > 3, "{} colours on screen", colours.len());

    // the detail line of the first CPU lane counts the cursor cell's tasks
    let (c0, _) = rows[0];
    let (a, b) = app.view.col_range(0, cols);
    let (busy, per, tasks) = truth(d, c0, a, b);
    let detail = s[usize::from(h) - 2].trim_end().to_string();
    if tasks.len() > 1 {
        let want = format!(
            "CPU{c0} @{}: {} tasks in {} ({:.0}% busy), most pid ",
            schedscope_tui::view::fmt_rel(0, app.view.width),
            tasks.len(),
            schedscope_tui::view::fmt_dur(b - a),
            busy as f64 * 100.0 / (b - a) as f64
        );
        assert!(detail.starts_with(&want), "{detail}\nwant {want}");
        let top = per.iter().map(|(p, ns)| (*ns, std::cmp::Reverse(*p))).max();
        let (ns, std::cmp::Reverse(p)) = top.expect("a process");
        let most = format!("most pid {p} ");
        assert!(detail.contains(&most), "{detail}\nwant {most}");
        let share = format!(" {:.0}%;", ns as f64 * 100.0 / (b - a) as f64);
        assert!(detail.contains(&share), "{detail}\nwant {share}");
    }

    // zoomed in until a cell holds a few runs: the colour is the process
    // with the most time in the cell (ties to the lower pid)
    let mid = app.view.lo + (app.view.hi - app.view.lo) / 2;
    app.view.cursor = mid;
    app.view.zoom(1.0 / 4096.0);
    let buf = buffer(&mut app, w, h);
    let d = app.data().expect("loaded");
    let mut checked = 0;
    for &(c, y) in &rows {
        for i in 0..cols {
            let (a, b) = app.view.col_range(i, cols);
            let runs = d.lanes.cpus[c].runs_in(a, b).count();
            let (busy, per, _) = truth(d, c, a, b);
            if busy == 0 || runs > schedscope_tui::index::EXACT_RUNS {
                continue;
            }
            let top = per.iter().map(|(p, ns)| (*ns, std::cmp::Reverse(*p))).max();
            let (_, std::cmp::Reverse(p)) = top.expect("a process");
            let cell = &buf[(8 + i, y)];
            assert_eq!(cell.fg, colour(p), "CPU{c} column {i} [{a}, {b})");
            assert_eq!(cell.symbol(), glyph(d, c, a, b, busy), "CPU{c} column {i}");
            checked += 1;
        }
    }
    // (at least half a lane's worth of cells: the zoomed window of a
    // recording made on a loaded machine can hold idle stretches)
    assert!(checked > usize::from(cols) / 2, "{checked} cells checked");
}
