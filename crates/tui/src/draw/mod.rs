//! Drawing: the frame layout (tab bar, body, detail and status lines),
//! the loading screen, the analysis tables and the help overlay. The
//! timeline body is in `timeline`. Everything writes through bounds-checked
//! helpers so that no terminal size can panic.

mod lane_cell;
mod timeline;

pub use timeline::{colour, dotted, pressure_glyph, repair_text, REPAIRED_LEGEND};

use crate::app::{App, Load, TABS};
use crate::keymap::help_lines;
use crate::view::fmt_dur;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{
    Block, Borders, Clear, Paragraph, Row, StatefulWidget, Table, TableState, Widget,
};
use ratatui::Frame;
use std::sync::atomic::Ordering;

/// Write `s` at (x, y), clipped to `area` and the buffer.
pub(crate) fn put_str(buf: &mut Buffer, area: Rect, x: u16, y: u16, s: &str, style: Style) -> u16 {
    if y < area.y || y >= area.bottom() {
        return x;
    }
    let mut x = x;
    for ch in s.chars() {
        if x >= area.right() {
            break;
        }
        if x >= area.x {
            if let Some(c) = buf.cell_mut((x, y)) {
                c.set_char(ch).set_style(style);
            }
        }
        x += 1;
    }
    x
}

/// Draw the whole UI into `frame`.
pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    draw_buf(frame.buffer_mut(), area, app);
}

/// Draw the whole UI into `buf` over `area` (what [`draw`] does; also used
/// by the benchmarks without a terminal).
pub fn draw_buf(buf: &mut Buffer, area: Rect, app: &mut App) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let top = Rect { height: 1, ..area };
    let status = Rect {
        y: area.bottom() - 1,
        height: 1,
        ..area
    };
    tab_bar(buf, top, app);
    if area.height < 3 {
        // one line of each at most
        if area.height == 2 {
            status_line(buf, status, app);
        }
        return;
    }
    let detail = Rect {
        y: area.bottom() - 2,
        height: 1,
        ..area
    };
    let body_h = area
        .height
        .saturating_sub(if area.height >= 5 { 3 } else { 2 });
    let body = Rect {
        y: area.y + 1,
        height: body_h,
        ..area
    };
    match &app.load {
        Load::Loading(phase, t0) => {
            let done = load_detail(app, phase);
            let msg = format!(
                "loading {} ({:.1} MB): {phase}... {:.1} s{}",
                app.path,
                app.file_size as f64 / 1e6,
                t0.elapsed().as_secs_f64(),
                if done.is_empty() {
                    done
                } else {
                    format!(" ({done})")
                }
            );
            put_str(
                buf,
                body,
                body.x,
                body.y + body.height / 2,
                &msg,
                Style::default(),
            );
        }
        Load::Failed(e) => {
            let style = if app.no_color {
                Style::default().add_modifier(Modifier::BOLD)
            } else {
                Style::default().fg(Color::Red)
            };
            Paragraph::new(vec![
                Line::raw(format!("error: {e}")),
                Line::raw("press q to quit"),
            ])
            .style(style)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .render(body, buf);
        }
        Load::Ready(_) => {
            if app.tab == 0 {
                if app.events_pane && body.height >= 8 {
                    let h = EVENTS_ROWS + 1;
                    let lanes = Rect {
                        height: body.height - h,
                        ..body
                    };
                    timeline::draw(buf, lanes, app);
                    events_pane(
                        buf,
                        Rect {
                            y: body.bottom() - h,
                            height: h,
                            ..body
                        },
                        app,
                    );
                } else {
                    timeline::draw(buf, body, app);
                }
            } else {
                table(buf, body, app);
            }
        }
    }
    if area.height >= 5 {
        detail_line(buf, detail, app);
    }
    status_line(buf, status, app);
    if app.help {
        help(buf, area);
    }
}

/// Events listed in the detail pane.
const EVENTS_ROWS: u16 = 5;

/// The events of the selected CPU in the cursor's column, one `perf
/// script` line each ([`crate::events`]), timed to the microsecond from
/// the trace start.
fn events_pane(buf: &mut Buffer, area: Rect, app: &App) {
    let Some(d) = app.data() else { return };
    let v = &app.view;
    let rel = |t: u64| crate::view::fmt_rel(t.saturating_sub(v.lo), v.width);
    let col = v.col_of(v.cursor, app.columns).unwrap_or(0);
    let (a, b) = v.col_range(col, app.columns);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let (Some(trace), Some(cpu)) = (&d.trace, app.selected_cpu()) else {
        put_str(
            buf,
            area,
            area.x,
            area.y,
            "events: select a CPU lane (no events kept for this view)",
            bold,
        );
        return;
    };
    let evs = crate::events::at(trace, cpu as u32, a, b, usize::from(EVENTS_ROWS));
    // a line wider than the pane wraps onto indented rows: an event is
    // shown whole or not at all (the first one always, cut if need be)
    let width = usize::from(area.width).max(8);
    let mut rows: Vec<String> = Vec::new();
    let mut shown = 0;
    for (t, text) in &evs {
        let at = crate::view::fmt_rel(t.saturating_sub(v.lo), 1_000_000);
        let wrapped = wrap(&format!("{at} {text}"), width, "    ");
        if shown > 0 && rows.len() + wrapped.len() > usize::from(EVENTS_ROWS) {
            break;
        }
        rows.extend(wrapped);
        shown += 1;
    }
    let more = if shown < evs.len() {
        format!(", {} more", evs.len() - shown)
    } else {
        String::new()
    };
    let head = format!(
        "events on CPU{cpu} in {}..{} ({shown} shown{more})",
        rel(a),
        rel(b),
    );
    put_str(buf, area, area.x, area.y, &head, bold);
    for (i, row) in rows.iter().take(usize::from(EVENTS_ROWS)).enumerate() {
        put_str(
            buf,
            area,
            area.x,
            area.y + 1 + i as u16,
            row,
            Style::default(),
        );
    }
}

/// `s` in rows of at most `width` characters, broken at spaces where it
/// can be (else mid-word), continuation rows starting with `indent`.
fn wrap(s: &str, width: usize, indent: &str) -> Vec<String> {
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut len = 0;
    for word in s.split(' ') {
        let wl = word.chars().count();
        let room = width.saturating_sub(len);
        if len > 0 && wl + 1 > room {
            rows.push(std::mem::take(&mut row));
            row.push_str(indent);
            len = indent.chars().count();
        } else if len > 0 {
            row.push(' ');
            len += 1;
        }
        // a word longer than a whole row is cut into row-sized pieces
        let mut rest: Vec<char> = word.chars().collect();
        while len + rest.len() > width && width > len {
            let cut = width - len;
            row.extend(&rest[..cut]);
            rows.push(std::mem::take(&mut row));
            row.push_str(indent);
            len = indent.chars().count();
            rest.drain(..cut);
        }
        row.extend(&rest);
        len += rest.len();
    }
    rows.push(row);
    rows
}

fn tab_bar(buf: &mut Buffer, area: Rect, app: &App) {
    let mut x = area.x;
    for (i, t) in TABS.iter().enumerate() {
        let label = format!(" {}:{t} ", i + 1);
        let style = if i == app.tab {
            Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::default()
        };
        x = put_str(buf, area, x, area.y, &label, style);
    }
    let name = format!(" {}", app.path);
    put_str(
        buf,
        area,
        x,
        area.y,
        &name,
        Style::default().add_modifier(Modifier::DIM),
    );
}

/// How much of the file the load decoded: `45% of 179.6 MB` while
/// decoding (when the loader counts bytes), `13.7 M events` after.
pub fn load_detail(app: &App, phase: &str) -> String {
    let Some(p) = &app.progress else {
        return String::new();
    };
    let events = p.events.load(Ordering::Relaxed);
    let bytes = p.decoded.load(Ordering::Relaxed);
    let streamed = p.streamed.load(Ordering::Relaxed);
    if events > 0 {
        format!("{:.1} M events", events as f64 / 1e6)
    } else if phase == "decoding" && bytes > 0 && app.file_size > 0 {
        let share = format!(
            "{:.0}% of {:.1} MB",
            (bytes as f64 * 100.0 / app.file_size as f64).min(100.0),
            app.file_size as f64 / 1e6
        );
        if streamed > 0 {
            format!("{share}, {:.1} M events", streamed as f64 / 1e6)
        } else {
            share
        }
    } else {
        String::new()
    }
}

/// The status line's part for a load still running behind cached lanes
/// or a preview: `lanes from cache, loading: decoding 45% of 1370.0 MB
/// 1.2 s`, `preview (recorded switches only), loading: decoding 23% of
/// 1413.6 MB, 3.6 M events 0.8 s`.
fn pending_text(app: &App) -> Option<String> {
    let (phase, t0) = app.pending?;
    let done = load_detail(app, phase);
    let what = if app.data().is_some_and(|d| d.preview) {
        "preview (recorded switches only)"
    } else {
        "lanes from cache"
    };
    Some(format!(
        "{what}, loading: {phase}{}{done} {:.1} s",
        if done.is_empty() { "" } else { " " },
        t0.elapsed().as_secs_f64()
    ))
}

fn status_line(buf: &mut Buffer, area: Rect, app: &App) {
    // the file's name only: the tab bar shows the whole path
    let name = std::path::Path::new(&app.path)
        .file_name()
        .map_or(app.path.clone(), |n| n.to_string_lossy().into_owned());
    let text = if app.search.typing {
        format!("/{}_  (Enter: search, Esc: cancel)", app.search.query)
    } else {
        match &app.load {
            Load::Ready(d) => {
                let v = &app.view;
                let mut s = format!(
                    "{} | {} events {} CPUs | window {} at +{} | zoom x{:.1} | cursor +{}",
                    name,
                    d.report.trace.events,
                    d.lanes.cpus.len(),
                    fmt_dur(v.width),
                    crate::view::fmt_rel(v.start - v.lo, v.width),
                    v.zoom_level(),
                    crate::view::fmt_rel(v.cursor - v.lo, v.width),
                );
                if let (Some(a), Some(b)) = (app.mark_a, app.mark_b) {
                    s.push_str(&format!(" | A-B {}", fmt_dur(a.abs_diff(b))));
                }
                if app.grouped() {
                    s.push_str(&format!(" | {}", d.cpu_groups.describe()));
                }
                if let Some(p) = pending_text(app) {
                    s = format!("{p} | {s}");
                }
                if app.message.is_empty() {
                    s
                } else {
                    format!("{} | {s}", app.message)
                }
            }
            Load::Loading(p, _) => {
                let done = load_detail(app, p);
                let sep = if done.is_empty() { "" } else { " " };
                format!("{name} | {p}{sep}{done}... | q quit")
            }
            Load::Failed(_) => format!("{name} | failed | q quit"),
        }
    };
    let style = Style::default().add_modifier(Modifier::REVERSED);
    for x in area.x..area.right() {
        if let Some(c) = buf.cell_mut((x, area.y)) {
            c.set_char(' ').set_style(style);
        }
    }
    put_str(buf, area, area.x, area.y, &text, style);
    let hint = " ? help ";
    if area.width as usize > text.len() + hint.len() {
        put_str(
            buf,
            area,
            area.right() - hint.len() as u16,
            area.y,
            hint,
            style,
        );
    }
}

fn detail_line(buf: &mut Buffer, area: Rect, app: &App) {
    if let Some(text) = timeline::detail(app) {
        put_str(buf, area, area.x, area.y, &text, Style::default());
    }
}

fn table(buf: &mut Buffer, area: Rect, app: &App) {
    let Some(d) = app.data() else { return };
    if d.lanes_only() {
        let msg = if d.preview {
            "the analyses are still loading (the timeline's lanes are a preview)"
        } else {
            "the analyses are still loading (the timeline's lanes come from the cache)"
        };
        put_str(buf, area, area.x, area.y, msg, Style::default());
        return;
    }
    let Some(tab) = d.tables.tabs.get(app.tab - 1) else {
        return;
    };
    put_str(
        buf,
        area,
        area.x,
        area.y,
        &tab.headline,
        Style::default().add_modifier(Modifier::BOLD),
    );
    if area.height < 2 {
        return;
    }
    let body = Rect {
        y: area.y + 1,
        height: area.height - 1,
        ..area
    };
    let ncol = tab.header.len();
    let mut widths: Vec<usize> = (0..ncol)
        .map(|i| {
            let w = tab
                .rows
                .iter()
                .map(|r| r.cells.get(i).map_or(0, |c| c.chars().count()))
                .chain(std::iter::once(tab.header[i].len()))
                .max()
                .unwrap_or(1);
            w.min(60)
        })
        .collect();
    // The first column (a task, gang or CPU name) gives way when the table
    // is wider than the pane; its cells lose their middle, not their end,
    // so `comm:tid` keeps the tid that tells rows apart.
    let others: usize = widths.iter().skip(1).map(|w| w + 2).sum();
    let first = widths.first().copied().unwrap_or(0);
    let room = (body.width as usize).saturating_sub(others);
    let squeeze = first > room && room >= 5;
    if squeeze {
        widths[0] = room;
    }
    let cells = |r: &crate::tables::Row| -> Vec<String> {
        let mut c = r.cells.clone();
        if let (true, Some(c0)) = (squeeze, c.first_mut()) {
            *c0 = elide_middle(c0, room);
        }
        c
    };
    let widths: Vec<Constraint> = widths
        .into_iter()
        .map(|w| Constraint::Length(w as u16))
        .collect();
    let header =
        Row::new(tab.header.clone()).style(Style::default().add_modifier(Modifier::UNDERLINED));
    let rows = tab.rows.iter().map(|r| Row::new(cells(r)));
    let t = Table::new(rows, widths)
        .header(header)
        .column_spacing(2)
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(app.rows[app.tab - 1]));
    StatefulWidget::render(t, body, buf, &mut state);
}

/// `s` in at most `w` characters: its start and its end around a `…`.
fn elide_middle(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w || w < 2 {
        return s.chars().take(w).collect();
    }
    let tail = (w - 1) / 2;
    let head = w - 1 - tail;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    out
}

fn help(buf: &mut Buffer, area: Rect) {
    let lines = help_lines();
    let kw = lines.iter().map(|l| l.0.len()).max().unwrap_or(0);
    let text: Vec<Line> = lines
        .iter()
        .map(|(k, h)| Line::raw(format!("{k:kw$}  {h}")))
        .collect();
    let w = (text.iter().map(|l| l.width()).max().unwrap_or(0) as u16 + 2).min(area.width);
    let h = (text.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(r, buf);
    Paragraph::new(text)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" keys (any key closes) "),
        )
        .render(r, buf);
}

#[cfg(test)]
mod tests {
    use super::{elide_middle, wrap};

    #[test]
    fn wrap_breaks_at_spaces_and_indents() {
        assert_eq!(wrap("ab cd ef", 5, "  "), vec!["ab cd", "  ef"]);
        assert_eq!(wrap("ab cd ef", 80, "  "), vec!["ab cd ef"]);
        assert_eq!(wrap("abcdefgh", 5, "  "), vec!["abcde", "  fgh"]);
        assert_eq!(
            wrap("x prev_comm=lto cgu.0", 12, "  "),
            vec!["x", "  prev_comm=", "  lto cgu.0"]
        );
        for w in 5..30 {
            let text = "0.000597s sched:sched_switch: prev_comm=lto cgu.0.rcgu. prev_pid=23865";
            let rows = wrap(text, w, "  ");
            assert!(rows.iter().all(|r| r.chars().count() <= w), "{w} {rows:?}");
            let joined: String = rows
                .iter()
                .map(|r| r.trim_start())
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(joined.replace(' ', ""), text.replace(' ', ""), "{w}");
        }
    }

    #[test]
    fn elide_middle_keeps_both_ends() {
        assert_eq!(elide_middle("sched-messaging:21195", 14), "sched-m…:21195");
        assert_eq!(
            elide_middle("sched-messaging:21195", 30),
            "sched-messaging:21195"
        );
        assert_eq!(elide_middle("abcdef", 5), "ab…ef");
        assert_eq!(elide_middle("abcdef", 1), "a");
        for w in 2..12 {
            assert_eq!(elide_middle("kworker/u8:2-events", w).chars().count(), w);
        }
    }
}
