//! The cells of one lane row (`timeline::lane_row`): its label, a CPU
//! lane's and a CPU group's cell, and a cell's style.

use super::timeline::{colour, dotted, eighth, is_repaired, Seen, LEGEND_MAX};
use crate::app::{App, LaneRow, Overlay};
use crate::data::Data;
use crate::index::Tid;
use ratatui::style::{Color, Modifier, Style};

/// The label a lane row starts with.
pub(super) fn lane_label(row: LaneRow, d: &Data, app: &App) -> String {
    match row {
        LaneRow::Cpu(c) => format!("CPU{c}"),
        LaneRow::Pressure(_) => " wait".to_string(),
        LaneRow::Group(g) => {
            let sign = if app.expanded.contains(&g) { '-' } else { '+' };
            let name = d.cpu_groups.labels.get(g).map_or("?", String::as_str);
            format!("{sign}{name}")
        }
        LaneRow::Task(t) => d.tasks.get(&t).map_or(t.to_string(), |i| i.comm.clone()),
        LaneRow::Overlay(_, Overlay::Latency) => " lat".to_string(),
        LaneRow::Overlay(_, Overlay::Preemptions) => " pre".to_string(),
        LaneRow::Overlay(_, Overlay::WastedIdle) => " wst".to_string(),
        LaneRow::Overlay(_, Overlay::PleExits) => " ple".to_string(),
        LaneRow::Overlay(_, Overlay::Ipis) => " ipi".to_string(),
        LaneRow::Overlay(_, Overlay::GangFragments) => " gng".to_string(),
        LaneRow::Overlay(_, Overlay::Throttled) => " thr".to_string(),
    }
}

/// A CPU lane's cell `[a, b)`: the busy block (dotted where repaired runs
/// hold it) in its process's colour, or without colour the task's code
/// (`stretch` counts the cells of the current task's code); the legend's
/// tally in `seen`.
pub(super) fn cpu_cell(
    d: &Data,
    app: &App,
    c: usize,
    (a, b): (u64, u64),
    stretch: &mut (Option<Tid>, usize),
    seen: &mut Seen,
) -> (char, Option<Color>) {
    let cell = d.lanes.cpus[c].cell(a, b);
    match (cell.task, cell.process) {
        (Some(_), Some(p)) if !app.filter.is_empty() && !app.filter.contains(&p) => {
            *stretch = (None, 0);
            ('░', None)
        }
        (Some(t), Some(p)) => {
            // the legend names what the cell shows: in colour
            // the process (by its dominant task when that task
            // is its own, else by its pid), else the task whose
            // code is drawn (none for a busy block)
            let shown = match (app.no_color, cell.several) {
                (false, _) if d.colour_key(t) == p => Some(t),
                (false, _) => Some(p),
                (true, false) => Some(t),
                (true, true) => None,
            };
            if let Some(shown) = shown {
                match seen.tasks.iter().position(|(t, _)| *t == shown) {
                    Some(k) => seen.tasks[k].1 += 1,
                    None if seen.tasks.len() < LEGEND_MAX => seen.tasks.push((shown, 1)),
                    None => {}
                }
            }
            let col = colour(p);
            let rep = d.lanes.repaired_ns(c, a, b);
            if rep > 0 && is_repaired(rep, d.lanes.cpus[c].busy_ns(a, b)) {
                // runs a repair switched in: dotted, same height
                seen.repaired = true;
                *stretch = (None, 0);
                (dotted(cell.busy), (!app.no_color).then_some(col))
            } else if app.no_color {
                if cell.several {
                    *stretch = (None, 0);
                    (eighth(cell.busy), None)
                } else {
                    if stretch.0 != Some(t) {
                        *stretch = (Some(t), 0);
                    }
                    let code = d.tasks.get(&t).map_or(['?', '?'], |i| i.code);
                    let ch = code[stretch.1 % 2];
                    stretch.1 += 1;
                    (ch, None)
                }
            } else {
                (eighth(cell.busy), Some(col))
            }
        }
        _ => {
            *stretch = (None, 0);
            (' ', None)
        }
    }
}

/// A CPU group lane's cell `[a, b)`: the group's mean busy fraction in the
/// colour of the task most of its CPUs run, dotted where repaired runs
/// hold it.
pub(super) fn group_cell(
    d: &Data,
    g: usize,
    (a, b): (u64, u64),
    seen: &mut Seen,
) -> (char, Option<Color>) {
    let cpus = d.cpu_groups.groups.get(g).map_or(&[][..], Vec::as_slice);
    let mut busy = 0.0;
    let (mut busy_ns, mut rep_ns) = (0u64, 0u64);
    let mut tally: Vec<(Tid, u32)> = Vec::new();
    for &c in cpus.iter().filter(|&&c| c < d.lanes.cpus.len()) {
        let cell = d.lanes.cpus[c].cell(a, b);
        busy += cell.busy;
        rep_ns += d.lanes.repaired_ns(c, a, b);
        busy_ns += d.lanes.cpus[c].busy_ns(a, b);
        if let Some(t) = cell.task {
            match tally.iter_mut().find(|x| x.0 == t) {
                Some(x) => x.1 += 1,
                None => tally.push((t, 1)),
            }
        }
    }
    let n = cpus.len().max(1) as f64;
    let top = tally.iter().max_by_key(|x| (x.1, -x.0)).map(|x| x.0);
    let fg = top.map(|t| colour(d.colour_key(t)));
    if is_repaired(rep_ns, busy_ns) {
        seen.repaired = true;
        (dotted(busy / n), fg)
    } else {
        (eighth(busy / n), fg)
    }
}

/// The style of a lane cell `[a, b)` drawn in `fg`: a task lane's cell
/// underlined where its cgroup was throttled (throttled overlay on), the
/// marked region's background, the cursor added by the caller.
pub(super) fn cell_style(
    row: LaneRow,
    d: &Data,
    app: &App,
    fg: Option<Color>,
    region: Option<(u64, u64)>,
    (a, b): (u64, u64),
) -> Style {
    let mut style = Style::default();
    if let LaneRow::Task(t) = row {
        if app.overlays.contains(&Overlay::Throttled)
            && d.marks
                .throttled
                .task_spans
                .get(&t)
                .is_some_and(|s| s.covered(a, b) > 0)
        {
            // its cgroup was throttled in this cell
            style = style.add_modifier(Modifier::UNDERLINED);
            if !app.no_color {
                style = style.bg(Color::Indexed(53));
            }
        }
    }
    if let (Some(fg), false) = (fg, app.no_color) {
        style = style.fg(fg);
    }
    if let Some((ra, rb)) = region {
        if b > ra && a < rb {
            if app.no_color {
                style = style.add_modifier(Modifier::UNDERLINED);
            } else {
                style = style.bg(Color::Indexed(236));
            }
        }
    }
    style
}
