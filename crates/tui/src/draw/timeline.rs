//! The timeline body: time axis, CPU lanes (with pressure strips, groups
//! and task lanes), cursor, markers and the region-statistics side pane.
//!
//! A CPU lane cell shows how busy the CPU was and who ran most, at any
//! zoom: in colour, a lower-eighth block whose height is the busy fraction
//! (`▁` to `█`), in the colour of the process with the most time in the
//! cell (summed over its threads, as KernelShark and Perfetto summarise a
//! zoomed-out CPU track), however many tasks share it; without colour, the
//! task's two-character code (`A0`, as `perf sched map`) repeated along
//! its stretch where one task ran, and the busy-height block where several
//! did. Idle is blank. The detail line counts the tasks of the cursor's
//! cell and names its main process. The strip under a lane shows the mean number of tasks waiting
//! for that CPU on a log scale ([`pressure_glyph`]); the overlay strips
//! (`w`, `e`, `i`, ...) the largest wakeup latency, the preemptions, the
//! wasted idle of each cell and so on (see [`overlay_cell`]); with `r`, a
//! task lane is underlined where its cgroup was throttled.
//!
//! Runs whose switch-in no sched_switch recorded, placed by the timeline's
//! lost-event repair, are drawn dotted: a cell where they hold at least
//! half of the busy time shows a braille block of the same height
//! ([`dotted`], `⣀` to `⣿`) instead of the eighth block or the code, in
//! CPU lanes, group lanes and (as `⣿`) task lanes; the legend says so and
//! the detail line of such a run names the evidence and the window.

use super::lane_cell::{cell_style, cpu_cell, group_cell, lane_label};
use super::put_str;
use crate::app::{App, LaneRow, Overlay};
use crate::data::Data;
use crate::index::Tid;
use crate::view::{fmt_dur, fmt_rel};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use schedscope_analysis::ThreadState;

/// Label column width.
pub const LABEL: u16 = 8;
/// Side pane width.
const PANE: u16 = 34;

const EIGHTHS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Braille blocks of one to four rows of dots: the busy height of a cell
/// whose runs a repair switched in.
const DOTS: [char; 5] = [' ', '⣀', '⣤', '⣶', '⣿'];

/// The glyph of a repaired cell `frac` busy: `⣀` `⣤` `⣶` `⣿` in quarters (at
/// least one row when busy at all).
pub fn dotted(frac: f64) -> char {
    if frac <= 0.0 {
        return ' ';
    }
    DOTS[((frac * 4.0).ceil() as usize).clamp(1, 4)]
}

/// Whether a cell with `repaired_ns` of repaired runs in `busy_ns` of
/// busy time is drawn dotted: they hold at least half of it.
pub fn is_repaired(repaired_ns: u64, busy_ns: u64) -> bool {
    repaired_ns > 0 && repaired_ns.saturating_mul(2) >= busy_ns
}

/// A stable colour per process: a golden-ratio hue walk (as KernelShark's).
pub fn colour(key: Tid) -> Color {
    let h = ((key as u32 as f64) * 0.618_033_988_75).fract() * 6.0;
    let (s, v) = (0.65, 0.95);
    let c = v * s;
    let x = c * (1.0 - ((h % 2.0) - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    let f = |u: f64| ((u + m) * 255.0).round() as u8;
    Color::Rgb(f(r), f(g), f(b))
}

pub(super) fn eighth(frac: f64) -> char {
    if frac <= 0.0 {
        return ' ';
    }
    EIGHTHS[((frac * 8.0).ceil() as usize).clamp(1, 8)]
}

/// The wait-strip glyph for a mean of `m` waiting tasks: a log scale,
/// ceil(log2(1 + m) x 4/3) eighths: 1 task = 2/8, 3 = 3/8, 7 = 4/8,
/// 15 = 6/8, 63 or more = full.
pub fn pressure_glyph(m: f64) -> char {
    eighth((1.0 + m).log2() * 4.0 / 3.0 / 8.0)
}

/// State glyph and colour of a task lane cell.
fn state_glyph(s: ThreadState) -> (char, Color) {
    match s {
        ThreadState::Running => ('█', Color::Green),
        ThreadState::Runnable => ('▒', Color::Red),
        ThreadState::Sleeping => ('·', Color::Blue),
        ThreadState::Blocked => ('D', Color::Magenta),
        ThreadState::Other => ('o', Color::Gray),
        ThreadState::Unknown | ThreadState::Dead => (' ', Color::Reset),
    }
}

/// Draw the timeline into `area`; records the lane area and columns in
/// `app` for the cursor and the mouse.
pub fn draw(buf: &mut Buffer, area: Rect, app: &mut App) {
    let pane = app.region.is_some() && area.width >= 70;
    let main = Rect {
        width: if pane { area.width - PANE } else { area.width },
        ..area
    };
    let cols = main.width.saturating_sub(LABEL);
    let lanes_area = Rect {
        x: main.x + LABEL.min(main.width),
        y: main.y + 1.min(main.height),
        width: cols,
        height: main.height.saturating_sub(1),
    };
    app.columns = cols.max(1);
    app.lanes_area = lanes_area;
    let rows = app.lane_rows();
    let h = usize::from(lanes_area.height);
    if app.lane < app.lane_scroll {
        app.lane_scroll = app.lane;
    } else if h > 0 && app.lane >= app.lane_scroll + h {
        app.lane_scroll = app.lane + 1 - h;
    }
    let app = &*app;
    let Some(d) = app.data() else { return };
    if cols == 0 || main.height == 0 {
        return;
    }
    axis(buf, main, app);
    // (task, cells it is shown in), in order of first appearance
    let mut seen = Seen::default();
    for (i, row) in rows.iter().enumerate().skip(app.lane_scroll).take(h) {
        let y = lanes_area.y + (i - app.lane_scroll) as u16;
        let selected = i == app.lane;
        lane_row(buf, main, y, *row, selected, app, &mut seen);
    }
    if rows.len().saturating_sub(app.lane_scroll) < h {
        // the processes that fill most of the screen first
        seen.tasks.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
        let tasks: Vec<Tid> = seen.tasks.iter().map(|&(t, _)| t).collect();
        legend(
            buf,
            main,
            lanes_area.bottom() - 1,
            &tasks,
            seen.repaired,
            app,
            d,
        );
    }
    if pane {
        side_pane(
            buf,
            Rect {
                x: area.x + main.width,
                width: PANE,
                ..area
            },
            app,
            d,
        );
    }
}

/// Tasks the legend can list.
pub(super) const LEGEND_MAX: usize = 64;

/// What the lanes drew, for the legend.
#[derive(Default)]
pub(super) struct Seen {
    /// (task, cells it is shown in), in order of first appearance.
    pub(super) tasks: Vec<(Tid, u32)>,
    /// Whether some cell was drawn dotted (repaired runs).
    pub(super) repaired: bool,
}

/// The legend entry of dotted cells.
pub const REPAIRED_LEGEND: &str = "⣿ switch-in repaired (lost events) ";

/// The legend of the tasks shown in the CPU lanes, those shown in the most
/// cells first (ties in order of first appearance): their colour (or code
/// without colour) and `comm[tid]`; first, when some cell was drawn dotted,
/// what the dots mean ([`REPAIRED_LEGEND`]).
fn legend(buf: &mut Buffer, main: Rect, y: u16, seen: &[Tid], repaired: bool, app: &App, d: &Data) {
    let mut x = put_str(
        buf,
        main,
        main.x,
        y,
        "tasks",
        Style::default().add_modifier(Modifier::DIM),
    );
    x = x.max(main.x + LABEL);
    if repaired {
        x = put_str(buf, main, x, y, REPAIRED_LEGEND, Style::default());
    }
    for &t in seen {
        if x >= main.right() {
            break;
        }
        if app.no_color {
            let code: String = d
                .tasks
                .get(&t)
                .map_or(['?', '?'], |i| i.code)
                .iter()
                .collect();
            x = put_str(
                buf,
                main,
                x,
                y,
                &format!("{code}={} ", d.label(t)),
                Style::default(),
            );
        } else {
            x = put_str(
                buf,
                main,
                x,
                y,
                "█",
                Style::default().fg(colour(d.colour_key(t))),
            );
            x = put_str(
                buf,
                main,
                x,
                y,
                &format!("{} ", d.label(t)),
                Style::default(),
            );
        }
    }
}

/// "Nice" tick step (1, 2, 5 x 10^k ns) for about one label per 14 columns.
fn tick_step(width: u64, cols: u16) -> u64 {
    let raw = (width as f64 * 14.0 / f64::from(cols.max(1))).max(1.0);
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let k = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    (k * p) as u64
}

fn axis(buf: &mut Buffer, main: Rect, app: &App) {
    let v = &app.view;
    let cols = main.width.saturating_sub(LABEL);
    let x0 = main.x + LABEL;
    let y = main.y;
    put_str(
        buf,
        main,
        main.x,
        y,
        "time",
        Style::default().add_modifier(Modifier::DIM),
    );
    let step = tick_step(v.width, cols);
    let rel0 = v.start - v.lo;
    let mut t = rel0.div_ceil(step) * step;
    let mut next_free = 0u16;
    while t < rel0 + v.width {
        if let Some(c) = v.col_of(v.lo + t, cols) {
            if c >= next_free {
                let label = format!("|{}", fmt_rel(t, step * 1000));
                let end = put_str(buf, main, x0 + c, y, &label, Style::default());
                next_free = end - x0 + 1;
            }
        }
        t += step;
    }
    for (m, ch) in [(app.mark_a, 'A'), (app.mark_b, 'B')] {
        if let Some(c) = m.and_then(|m| v.col_of(m, cols)) {
            put_str(
                buf,
                main,
                x0 + c,
                y,
                &ch.to_string(),
                Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED),
            );
        }
    }
}

fn lane_row(
    buf: &mut Buffer,
    main: Rect,
    y: u16,
    row: LaneRow,
    selected: bool,
    app: &App,
    seen: &mut Seen,
) {
    let Some(d) = app.data() else { return };
    let v = &app.view;
    let cols = main.width.saturating_sub(LABEL);
    let x0 = main.x + LABEL;
    let mut lstyle = Style::default();
    if selected {
        lstyle = lstyle.add_modifier(Modifier::REVERSED);
    }
    let label: String = lane_label(row, d, app)
        .chars()
        .take(usize::from(LABEL) - 1)
        .collect();
    put_str(buf, main, main.x, y, &label, lstyle);
    let region = match (app.mark_a, app.mark_b) {
        (Some(a), Some(b)) => Some((a.min(b), a.max(b))),
        _ => None,
    };
    let cursor_col = v.col_of(v.cursor, cols);
    // code stretch for colourless lanes: (task, cells so far)
    let mut stretch: (Option<Tid>, usize) = (None, 0);
    for i in 0..cols {
        let (a, b) = v.col_range(i, cols);
        let (ch, fg) = match row {
            LaneRow::Cpu(c) => cpu_cell(d, app, c, (a, b), &mut stretch, seen),
            LaneRow::Pressure(c) => {
                let m = d.lanes.cpus[c].pressure.mean(a, b);
                (pressure_glyph(m), Some(Color::Yellow))
            }
            LaneRow::Group(g) => group_cell(d, g, (a, b), seen),
            LaneRow::Overlay(c, o) => overlay_cell(d, c, o, a, b),
            LaneRow::Task(t) => {
                let (s, repaired) = task_state(d, t, a, b);
                let (ch, col) = state_glyph(s);
                if repaired {
                    seen.repaired = true;
                    (DOTS[4], Some(col))
                } else {
                    (ch, Some(col))
                }
            }
        };
        let mut style = cell_style(row, d, app, fg, region, (a, b));
        if cursor_col == Some(i) {
            style = style.add_modifier(Modifier::REVERSED);
        }
        if let Some(cell) = buf.cell_mut((x0 + i, y)) {
            if x0 + i < main.right() {
                cell.set_char(ch).set_style(style);
            }
        }
    }
}

/// An overlay strip cell: latency as one eighth step per doubling from
/// 1 us (full at 128 us and above), preemptions as a digit (`+` above 9),
/// wasted idle and gang fragments as the share of the cell, throttled
/// periods as their throttled time per ns of the cell, PLE exits
/// and IPIs as a count digit (`T` when an IPI of the cell is a TLB
/// shootdown).
fn overlay_cell(d: &Data, c: usize, o: Overlay, a: u64, b: u64) -> (char, Option<Color>) {
    let digit = |n: usize, colour: Color| match n {
        0 => (' ', None),
        1..=9 => (char::from(b'0' + n as u8), Some(colour)),
        _ => ('+', Some(colour)),
    };
    match o {
        Overlay::PleExits => digit(
            d.marks.ple.get(c).map_or(0, |m| m.count(a, b)),
            Color::LightRed,
        ),
        Overlay::Ipis => match d.marks.ipis.get(c).and_then(|m| m.max(a, b)) {
            None => (' ', None),
            Some(crate::overlay::SHOOTDOWN) => ('T', Some(Color::LightRed)),
            Some(_) => digit(
                d.marks.ipis.get(c).map_or(0, |m| m.count(a, b)),
                Color::Yellow,
            ),
        },
        Overlay::GangFragments => {
            let w = d.marks.gang.get(c).map_or(0, |s| s.covered(a, b));
            (eighth(w as f64 / (b - a) as f64), Some(Color::Blue))
        }
        Overlay::Latency => match d.lanes.wakeups.get(c).and_then(|m| m.max(a, b)) {
            None => (' ', None),
            Some(ns) => {
                let steps = (ns as f64 / 1000.0).max(1.0).log2().floor() + 1.0;
                (eighth(steps / 8.0), Some(Color::Magenta))
            }
        },
        Overlay::Preemptions => digit(
            d.lanes.preemptions.get(c).map_or(0, |m| m.count(a, b)),
            Color::Cyan,
        ),
        Overlay::WastedIdle => {
            let w = d.lanes.wasted.get(c).map_or(0, |s| s.covered(a, b));
            (eighth(w as f64 / (b - a) as f64), Some(Color::Red))
        }
        Overlay::Throttled => (
            eighth(d.marks.throttled.density(c, a, b)),
            Some(Color::LightMagenta),
        ),
    }
}

/// The state a task spent the most time in during `[a, b)` (exact for up
/// to 32 intervals, else the state at the cell's middle), and whether it
/// is Running in runs a repair switched in (at least half of its Running
/// time in the cell; else the interval at the middle).
fn task_state(d: &Data, tid: Tid, a: u64, b: u64) -> (ThreadState, bool) {
    let Some(info) = d.tasks.get(&tid) else {
        return (ThreadState::Unknown, false);
    };
    let tl = &d.timeline;
    let end = tl.end;
    let repaired = |iv: &schedscope_analysis::StateInterval| {
        iv.state == ThreadState::Running
            && iv
                .cpu
                .is_some_and(|c| tl.repair_at(c, schedscope_trace::Tid(tid), iv.ts).is_some())
    };
    let ivs = &tl.threads[info.thread].intervals;
    let i0 = ivs.partition_point(|iv| iv.end_or(end).0 <= a);
    let i1 = ivs.partition_point(|iv| iv.ts.0 < b).max(i0);
    if i1 - i0 > 32 {
        let mid = a + (b - a) / 2;
        let i = ivs.partition_point(|iv| iv.end_or(end).0 <= mid);
        return ivs.get(i).map_or((ThreadState::Unknown, false), |iv| {
            (iv.state, repaired(&iv))
        });
    }
    let mut best = (0u64, ThreadState::Unknown);
    let (mut running, mut rep) = (0u64, 0u64);
    for iv in ivs.range(i0..i1) {
        let ov = iv.end_or(end).0.min(b).saturating_sub(iv.ts.0.max(a));
        if ov > best.0 {
            best = (ov, iv.state);
        }
        if iv.state == ThreadState::Running {
            running += ov;
            if repaired(&iv) {
                rep += ov;
            }
        }
    }
    (
        best.1,
        best.1 == ThreadState::Running && is_repaired(rep, running),
    )
}

fn side_pane(buf: &mut Buffer, area: Rect, app: &App, d: &Data) {
    let Some(r) = &app.region else { return };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines: Vec<(String, Style)> = vec![
        (format!("Region A-B {}", fmt_dur(r.b - r.a)), bold),
        (format!("busy {}", fmt_dur(r.busy_ns)), Style::default()),
        (format!("idle {}", fmt_dur(r.idle_ns)), Style::default()),
        (
            format!("wasted idle {}", fmt_dur(r.wasted_idle_ns)),
            Style::default(),
        ),
        (format!("preemptions {}", r.preemptions), Style::default()),
    ];
    match (
        r.percentile(50.0),
        r.percentile(90.0),
        r.percentile(99.0),
        r.latencies.last(),
    ) {
        (Some(p50), Some(p90), Some(p99), Some(max)) => {
            lines.push((format!("latency n={}", r.latencies.len()), bold));
            lines.push((
                format!(" p50 {} p90 {}", fmt_dur(p50), fmt_dur(p90)),
                Style::default(),
            ));
            lines.push((
                format!(" p99 {} max {}", fmt_dur(p99), fmt_dur(*max)),
                Style::default(),
            ));
        }
        _ => lines.push(("latency: no wakeups".into(), Style::default())),
    }
    lines.push(("task        cpu    wait  pre".into(), bold));
    for t in &r.tasks {
        let comm = d.tasks.get(&t.tid).map_or("", |i| i.comm.as_str());
        let name: String = format!("{} {comm}", t.tid).chars().take(11).collect();
        lines.push((
            format!(
                "{name:11} {:>6} {:>6} {:>3}",
                short_ms(t.cpu_ns),
                short_ms(t.wait_ns),
                t.preemptions
            ),
            Style::default(),
        ));
    }
    for (i, (l, s)) in lines.iter().enumerate().take(usize::from(area.height)) {
        put_str(buf, area, area.x + 1, area.y + i as u16, l, *s);
    }
    for y in area.y..area.bottom() {
        put_str(buf, area, area.x, y, "│", Style::default());
    }
}

/// Milliseconds in at most 6 characters.
fn short_ms(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms >= 1000.0 {
        format!("{:.0}s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.3}")
    }
}

/// The detail line: the run (or state) under the cursor on the selected lane.
pub fn detail(app: &App) -> Option<String> {
    let d = app.data()?;
    let v = &app.view;
    let rel = |t: u64| fmt_rel(t.saturating_sub(v.lo), v.width);
    match app.lane_rows().get(app.lane)? {
        LaneRow::Overlay(c, Overlay::Throttled) => {
            let ps = d.marks.throttled.at_cpu(*c, v.cursor);
            Some(if ps.is_empty() {
                format!(
                    "CPU{c} @{}: no throttled period here ({} in the trace)",
                    rel(v.cursor),
                    d.marks.throttled.info.periods.len()
                )
            } else {
                format!("CPU{c} @{}: {}", rel(v.cursor), throttle_text(d, &ps, &rel))
            })
        }
        LaneRow::Group(g) => {
            let cpus = d.cpu_groups.groups.get(*g)?;
            let busy = cpus
                .iter()
                .filter(|&&c| {
                    d.lanes
                        .cpus
                        .get(c)
                        .and_then(|l| l.run_at(v.cursor))
                        .is_some_and(|r| r.2 != 0)
                })
                .count();
            Some(format!(
                "{} @{}: {} CPUs ({}), {busy} running a task (Enter: expand)",
                d.cpu_groups.labels.get(*g).map_or("?", String::as_str),
                rel(v.cursor),
                cpus.len(),
                cpu_list(cpus),
            ))
        }
        LaneRow::Cpu(c) | LaneRow::Pressure(c) | LaneRow::Overlay(c, _) => {
            let lane = d.lanes.cpus.get(*c)?;
            let waiting = lane.pressure.count_at(v.cursor);
            let columns = app.columns.max(1);
            let (a, b) = v.col_range(v.col_of(v.cursor, columns).unwrap_or(0), columns);
            let census = lane.census(a, b);
            if let (true, Some((p, ns))) = (census.tasks > 1, census.process) {
                // several tasks in the cursor's cell: say who shared it
                let comm = d
                    .tasks
                    .get(&p)
                    .or_else(|| d.tasks.values().find(|t| t.tgid == Some(p)))
                    .map(|t| t.comm.as_str())
                    // (a preview knows tasks by tid only)
                    .filter(|c| !c.is_empty())
                    .unwrap_or("?");
                // (times to a thousandth of the cell: the run is inside it)
                let fine = |t: u64| fmt_rel(t.saturating_sub(v.lo), b - a);
                let now = match lane.run_at(v.cursor) {
                    Some((s, e, t)) if t != 0 => format!(
                        "; at the cursor {} ran {}..{} ({}){}",
                        d.label(t),
                        fine(s),
                        fine(e),
                        fmt_dur(e - s),
                        repair_text(d, v.lo, *c as u32, t, s)
                    ),
                    _ => String::new(),
                };
                return Some(format!(
                    "CPU{c} @{}: {} tasks in {} ({:.0}% busy), most pid {p} {comm} {:.0}%; {waiting} waiting{now}",
                    rel(v.cursor),
                    census.tasks,
                    fmt_dur(b - a),
                    lane.busy_ns(a, b) as f64 * 100.0 / (b - a) as f64,
                    ns as f64 * 100.0 / (b - a) as f64,
                ));
            }
            Some(match lane.run_at(v.cursor) {
                Some((s, e, 0)) => format!(
                    "CPU{c} @{}: idle {}..{} ({}); {waiting} waiting for this CPU",
                    rel(v.cursor),
                    rel(s),
                    rel(e),
                    fmt_dur(e - s)
                ),
                Some((s, e, tid)) => {
                    let pid = d
                        .tasks
                        .get(&tid)
                        .and_then(|t| t.tgid)
                        .map_or(String::new(), |p| format!(" pid {p}"));
                    format!(
                        "CPU{c} @{}: {}{pid} ran {}..{} ({}){}; {waiting} waiting",
                        rel(v.cursor),
                        d.label(tid),
                        rel(s),
                        rel(e),
                        fmt_dur(e - s),
                        repair_text(d, v.lo, *c as u32, tid, s)
                    )
                }
                None => format!("CPU{c} @{}: no run known; {waiting} waiting", rel(v.cursor)),
            })
        }
        LaneRow::Task(t) => {
            let info = d.tasks.get(t)?;
            let end = d.timeline.end;
            let ivs = &d.timeline.threads[info.thread].intervals;
            let i = ivs.partition_point(|iv| iv.end_or(end).0 <= v.cursor);
            let iv = ivs.get(i)?;
            let thr = if app.overlays.contains(&Overlay::Throttled) {
                let ps = d.marks.throttled.at_task(*t, v.cursor);
                if ps.is_empty() {
                    String::new()
                } else {
                    format!("; {}", throttle_text(d, &ps, &rel))
                }
            } else {
                String::new()
            };
            Some(
                format!(
                    "{} @{}: {:?}{} {}..{} ({}){}",
                    d.label(*t),
                    rel(v.cursor),
                    iv.state,
                    iv.cpu.map_or(String::new(), |c| format!(" on CPU{}", c.0)),
                    rel(iv.ts.0),
                    rel(iv.end_or(end).0),
                    fmt_dur(iv.end_or(end).0.saturating_sub(iv.ts.0)),
                    iv.waker
                        .map_or(String::new(), |w| format!(" woken by {}", d.label(w.0)))
                ) + &match (iv.state, iv.cpu) {
                    (ThreadState::Running, Some(c)) => repair_text(d, v.lo, c.0, *t, iv.ts.0),
                    _ => String::new(),
                } + &thr,
            )
        }
    }
}

/// What the detail line adds about a run of `tid` on `cpu` that started at
/// `start` when a lost-event repair placed its switch-in: `; switch-in
/// repaired from EVIDENCE, between EARLIEST and LATEST` (times from the
/// trace start `lo`, to the microsecond); empty for a recorded switch-in.
pub fn repair_text(d: &Data, lo: u64, cpu: u32, tid: Tid, start: u64) -> String {
    let at = |t: u64| fmt_rel(t.saturating_sub(lo), 1_000_000);
    match d.timeline.repair_at(
        schedscope_trace::Cpu(cpu),
        schedscope_trace::Tid(tid),
        schedscope_trace::Ts(start),
    ) {
        Some(r) => format!(
            "; switch-in repaired from {}, between {} and {}",
            r.evidence.name(),
            at(r.earliest.0),
            at(r.latest.0)
        ),
        None => String::new(),
    }
}

/// Member tasks listed in the detail line of a throttled period.
const MEMBERS_SHOWN: usize = 3;

/// Throttled periods as the detail line tells them: the cgroup, how often
/// and how long it was throttled in the sample interval, its member tasks,
/// the interval and the quota (most telling first, for narrow screens).
fn throttle_text(
    d: &Data,
    ps: &[&schedscope_analysis::throttle::ThrottlePeriod],
    rel: &dyn Fn(u64) -> String,
) -> String {
    let info = &d.marks.throttled.info;
    ps.iter()
        .filter_map(|p| {
            let cg = info.cgroups.get(p.cgroup)?;
            let mut members: Vec<String> = cg
                .members
                .iter()
                .take(MEMBERS_SHOWN)
                .map(|t| d.label(t.0))
                .collect();
            if cg.members.len() > MEMBERS_SHOWN {
                members.push(format!("+{} more", cg.members.len() - MEMBERS_SHOWN));
            }
            Some(format!(
                "{} throttled {}x for {}, members {}; samples {}..{}, quota {}/{}",
                cg.path,
                p.nr_throttled,
                fmt_dur(p.throttled_ns),
                if members.is_empty() {
                    "unknown".to_string()
                } else {
                    members.join(", ")
                },
                rel(p.start_ns),
                rel(p.end_ns),
                fmt_dur(cg.quota_us.max(0) as u64 * 1000),
                fmt_dur(cg.period_us * 1000),
            ))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `0-15,32-47` for ascending CPUs.
fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}
