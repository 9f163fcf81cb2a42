//! The application state and what each [`Action`] does to it. No drawing
//! and no terminal here, so tests drive it with keys directly.

use crate::data::{Data, LoadMsg, Progress};
use crate::index::Tid;
use crate::keymap::{action_for, Action};
pub use crate::overlay::Overlay;
use crate::stats::RegionStats;
use crate::view::Viewport;
use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::Rect;
use std::sync::Arc;
use std::time::Instant;

/// Tab titles; 0 is the timeline, the rest follow [`crate::tables::Tables`].
pub const TABS: [&str; 6] = ["Timeline", "Latency", "Gang", "LHP", "Idle", "TLB"];

/// CPUs above which lanes are grouped (see [`crate::groups`]).
pub const GROUP_ABOVE: usize = 32;

/// Loading state.
pub enum Load {
    /// Still working: phase and start time.
    Loading(&'static str, Instant),
    /// Ready.
    Ready(Box<Data>),
    /// Failed with this message.
    Failed(String),
}

/// One row of the timeline's lane area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneRow {
    /// A CPU lane.
    Cpu(usize),
    /// The Runnable-pressure strip of a CPU.
    Pressure(usize),
    /// A CPU group (index into [`crate::groups::CpuGroups::groups`]).
    Group(usize),
    /// A task lane (index into the selected tasks).
    Task(Tid),
    /// An overlay strip of a CPU.
    Overlay(usize, Overlay),
}

/// Search prompt state.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// Typing the query.
    pub typing: bool,
    /// The query.
    pub query: String,
}

/// Everything the UI shows, apart from the trace data.
pub struct App {
    /// Input path, as given.
    pub path: String,
    /// Input size in bytes.
    pub file_size: u64,
    /// Loading state (data when ready).
    pub load: Load,
    /// The load still running behind lanes read from the cache or a
    /// preview: its phase and start.
    pub pending: Option<(&'static str, Instant)>,
    /// How far the load got (bytes and events decoded).
    pub progress: Option<Arc<Progress>>,
    /// Window and cursor.
    pub view: Viewport,
    /// Current tab (0 = timeline).
    pub tab: usize,
    /// Selected row per analysis tab.
    pub rows: [usize; 5],
    /// Selected lane row (index into [`App::lane_rows`]).
    pub lane: usize,
    /// First lane row shown.
    pub lane_scroll: usize,
    /// Marker A (ns).
    pub mark_a: Option<u64>,
    /// Marker B (ns).
    pub mark_b: Option<u64>,
    /// Region statistics of A-B (cached).
    pub region: Option<RegionStats>,
    /// Help overlay shown.
    pub help: bool,
    /// Pressure strips shown.
    pub pressure: bool,
    /// Task lanes shown for the selected tasks.
    pub task_lanes: bool,
    /// Overlay strips shown.
    pub overlays: Vec<Overlay>,
    /// Event detail pane shown.
    pub events_pane: bool,
    /// CPU filter: only this CPU's lanes are shown.
    pub cpu_filter: Option<usize>,
    /// Process filter: only these processes' cells are drawn in colour
    /// (and with their codes); others are dimmed.
    pub filter: Vec<Tid>,
    /// Expanded CPU groups (indexes into the data's CPU groups).
    pub expanded: Vec<usize>,
    /// Search prompt.
    pub search: Search,
    /// Selected tasks (search matches or the task under the cursor).
    pub selected: Vec<Tid>,
    /// One-line message (last action's outcome).
    pub message: String,
    /// No colours (NO_COLOR): glyphs and task codes instead.
    pub no_color: bool,
    /// Set when the user asked to quit.
    pub quit: bool,
    /// Columns of the lane area at the last draw (for cursor steps).
    pub columns: u16,
    /// The lane area at the last draw (for the mouse).
    pub lanes_area: Rect,
    /// Where a mouse drag started (ns).
    drag_from: Option<u64>,
}

impl App {
    /// A new app, loading `path`.
    pub fn new(path: &str, file_size: u64, no_color: bool) -> App {
        App {
            path: path.to_string(),
            file_size,
            load: Load::Loading("starting", Instant::now()),
            pending: None,
            progress: None,
            view: Viewport::new(0, 1),
            tab: 0,
            rows: [0; 5],
            lane: 0,
            lane_scroll: 0,
            mark_a: None,
            mark_b: None,
            region: None,
            help: false,
            pressure: true,
            task_lanes: false,
            overlays: Vec::new(),
            filter: Vec::new(),
            cpu_filter: None,
            events_pane: false,
            expanded: Vec::new(),
            search: Search::default(),
            selected: Vec::new(),
            message: String::new(),
            no_color,
            quit: false,
            columns: 80,
            lanes_area: Rect::default(),
            drag_from: None,
        }
    }

    /// An app with data already loaded (tests, benchmarks).
    pub fn with_data(path: &str, data: Data, no_color: bool) -> App {
        let mut app = App::new(path, 0, no_color);
        app.on_load(LoadMsg::Done(Box::new(data)));
        app
    }

    /// The loaded data, if ready.
    pub fn data(&self) -> Option<&Data> {
        match &self.load {
            Load::Ready(d) => Some(d),
            _ => None,
        }
    }

    /// Take a message from the loading job.
    pub fn on_load(&mut self, msg: LoadMsg) {
        match msg {
            LoadMsg::Phase(p) => {
                if let Load::Loading(_, t0) = self.load {
                    self.load = Load::Loading(p, t0);
                } else if let Some((_, t0)) = self.pending {
                    self.pending = Some((p, t0));
                }
            }
            LoadMsg::Cached(d) => {
                if let Load::Loading(p, t0) = self.load {
                    self.pending = Some((p, t0));
                    self.show(d);
                }
            }
            // a preview replaces the loading screen or an older preview,
            // never cached lanes or the full data
            LoadMsg::Preview(d) => {
                if let Load::Loading(p, t0) = self.load {
                    self.pending = Some((p, t0));
                    self.show(d);
                } else if self.data().is_some_and(|old| old.preview) {
                    self.show(d);
                }
            }
            LoadMsg::Done(d) => {
                self.pending = None;
                self.show(d);
            }
            LoadMsg::Failed(e) => {
                self.pending = None;
                self.load = Load::Failed(e);
            }
        }
    }

    /// Show `d`: the whole trace, unless it replaces lanes of the same
    /// span read from the cache (the view, lanes and markers stay), or a
    /// preview whose view was moved (the window stays, inside the new
    /// span).
    fn show(&mut self, d: Box<Data>) {
        let (lo, hi) = (
            d.timeline.start.0,
            d.timeline.end.0.max(d.timeline.start.0 + 1),
        );
        let old = self.data().map(|old| {
            let span = (old.timeline.start.0, old.timeline.end.0);
            (span, old.preview)
        });
        let same = old.is_some_and(|(span, _)| span == (d.timeline.start.0, d.timeline.end.0));
        if old.is_some_and(|(_, preview)| preview) {
            // a grown preview, or the full data after one
            if self.view.is_whole() {
                let cursor = self.view.cursor;
                self.view = Viewport::new(lo, hi);
                self.view.cursor = cursor;
            }
            self.view.rebase(lo, hi);
        } else if !same {
            self.view = Viewport::new(lo, hi);
        }
        self.load = Load::Ready(d);
        self.update_region();
    }

    /// Whether only the cached lanes or a preview are shown: what needs
    /// the analyses, the events or the threads' states waits for the
    /// load. Says so in the message line when it is.
    fn lanes_only(&mut self, what: &str) -> bool {
        let Some(d) = self.data().filter(|d| d.lanes_only()) else {
            return false;
        };
        self.message = if d.preview {
            format!("{what}: still loading (the lanes are a preview)")
        } else {
            format!("{what}: still loading (the lanes come from the cache)")
        };
        true
    }

    /// Whether the timeline groups its CPUs.
    pub fn grouped(&self) -> bool {
        self.data()
            .is_some_and(|d| d.lanes.cpus.len() > GROUP_ABOVE)
    }

    /// The rows of the lane area, top to bottom.
    pub fn lane_rows(&self) -> Vec<LaneRow> {
        let Some(d) = self.data() else {
            return Vec::new();
        };
        let n = d.lanes.cpus.len();
        let mut rows = Vec::new();
        let push_cpu = |rows: &mut Vec<LaneRow>, c: usize| {
            rows.push(LaneRow::Cpu(c));
            if self.pressure {
                rows.push(LaneRow::Pressure(c));
            }
            for o in Overlay::ALL {
                if self.overlays.contains(&o) {
                    rows.push(LaneRow::Overlay(c, o));
                }
            }
        };
        if let Some(c) = self.cpu_filter.filter(|&c| c < n) {
            push_cpu(&mut rows, c);
        } else if n > GROUP_ABOVE {
            for (g, cpus) in d.cpu_groups.groups.iter().enumerate() {
                rows.push(LaneRow::Group(g));
                if self.expanded.contains(&g) {
                    for &c in cpus.iter().filter(|&&c| c < n) {
                        push_cpu(&mut rows, c);
                    }
                }
            }
        } else {
            for c in 0..n {
                push_cpu(&mut rows, c);
            }
        }
        if self.task_lanes {
            rows.extend(self.selected.iter().map(|&t| LaneRow::Task(t)));
        }
        rows
    }

    /// The CPU of the selected lane row (for a pressure strip, its CPU;
    /// for a group, its first CPU).
    pub fn selected_cpu(&self) -> Option<usize> {
        match self.lane_rows().get(self.lane)? {
            LaneRow::Cpu(c) | LaneRow::Pressure(c) | LaneRow::Overlay(c, _) => Some(*c),
            LaneRow::Group(g) => self
                .data()?
                .cpu_groups
                .groups
                .get(*g)
                .and_then(|v| v.first().copied()),
            LaneRow::Task(_) => None,
        }
    }

    /// The task under the cursor on the selected lane.
    pub fn task_under_cursor(&self) -> Option<Tid> {
        let d = self.data()?;
        match self.lane_rows().get(self.lane)? {
            LaneRow::Task(t) => Some(*t),
            _ => {
                let lane = d.lanes.cpus.get(self.selected_cpu()?)?;
                let (a, b) = self.view.col_range(
                    self.view
                        .col_of(self.view.cursor, self.columns)
                        .unwrap_or(0),
                    self.columns,
                );
                lane.task_at(self.view.cursor)
                    .filter(|&t| t != 0)
                    .or_else(|| lane.cell(a, b).task)
            }
        }
    }

    /// Handle one key.
    pub fn on_key(&mut self, key: KeyEvent) {
        self.message.clear();
        if self.search.typing {
            self.search_key(key);
            return;
        }
        if self.help {
            // any key closes the help (Esc only closes it); the quitting
            // keys q and Ctrl-C also quit
            self.help = false;
            if action_for(key) != Some(Action::Quit) {
                return;
            }
        }
        if let Some(a) = action_for(key) {
            self.act(a);
        }
    }

    fn search_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => self.quit = true,
            KeyCode::Esc => {
                self.search.typing = false;
                self.search.query.clear();
                self.message = "search cancelled".into();
            }
            KeyCode::Enter => {
                self.search.typing = false;
                self.run_search();
            }
            KeyCode::Backspace => {
                self.search.query.pop();
            }
            KeyCode::Char(c) => self.search.query.push(c),
            _ => {}
        }
    }

    /// Select the tasks whose comm contains the query (case-insensitive)
    /// or whose tid is the query, and go to the first switch-in after the
    /// cursor.
    fn run_search(&mut self) {
        let q = self.search.query.trim().to_lowercase();
        let Some(d) = self.data() else { return };
        let tid: Option<Tid> = q.parse().ok();
        let mut found: Vec<Tid> = d
            .timeline
            .threads
            .iter()
            .filter(|th| {
                Some(th.tid.0) == tid || (!q.is_empty() && th.comm.to_lowercase().contains(&q))
            })
            .map(|th| th.tid.0)
            .collect();
        found.sort_unstable();
        if found.is_empty() {
            self.message = format!("no task matches '{}'", self.search.query);
            return;
        }
        let matched = format!("{} task(s) match '{}'", found.len(), self.search.query);
        self.selected = found;
        self.tab = 0;
        self.step_switch(true, true);
        self.message = format!("{matched}; {}", self.message);
    }

    /// Perform an action.
    pub fn act(&mut self, a: Action) {
        match a {
            Action::Quit => self.quit = true,
            Action::Close => self.message = "nothing to close (q quits)".into(),
            Action::Help => self.help = !self.help,
            Action::ZoomIn => self.view.zoom(0.5),
            Action::ZoomOut => self.view.zoom(2.0),
            Action::Fit => self.view.fit(),
            Action::PanLeft => self.view.pan(-0.125),
            Action::PanRight => self.view.pan(0.125),
            Action::CursorLeft => self.view.step_cursor(-1, self.columns),
            Action::CursorRight => self.view.step_cursor(1, self.columns),
            Action::Start => self.view.home(),
            Action::End => self.view.end_of_trace(),
            Action::Up => self.move_row(-1),
            Action::Down => self.move_row(1),
            Action::MarkA => {
                self.mark_a = Some(self.view.cursor);
                self.update_region();
            }
            Action::MarkB => {
                self.mark_b = Some(self.view.cursor);
                self.update_region();
            }
            Action::ClearMarks => {
                self.mark_a = None;
                self.mark_b = None;
                self.region = None;
            }
            Action::NextTab => self.tab = (self.tab + 1) % TABS.len(),
            Action::PrevTab => self.tab = (self.tab + TABS.len() - 1) % TABS.len(),
            Action::Tab(n) => self.tab = usize::from(n).min(TABS.len() - 1),
            Action::Enter if self.tab != 0 && self.lanes_only("jumps") => {}
            Action::Enter => self.enter(),
            Action::ShiftEnter => self.step_switch(false, false),
            Action::Next => self.step_switch(true, false),
            Action::Prev => self.step_switch(false, false),
            Action::Search => {
                self.search.typing = true;
                self.search.query.clear();
            }
            Action::Select => {
                if let Some(t) = self.task_under_cursor() {
                    self.selected = vec![t];
                    let label = self.data().map(|d| d.label(t)).unwrap_or_default();
                    self.message = format!("selected {label}");
                }
            }
            Action::Pressure => self.pressure = !self.pressure,
            Action::TaskLanes => self.task_lanes = !self.task_lanes,
            Action::Filter => self.toggle_filter(),
            Action::Events => self.events_pane = !self.events_pane,
            Action::CpuFilter => {
                self.cpu_filter = match self.cpu_filter {
                    Some(_) => None,
                    None => self.selected_cpu(),
                };
                self.lane = 0;
                self.message = match self.cpu_filter {
                    Some(c) => format!("only CPU{c}"),
                    None => "all CPUs".into(),
                };
            }
            Action::Overlay(o) => {
                if let Some(i) = self.overlays.iter().position(|&x| x == o) {
                    self.overlays.remove(i);
                } else {
                    self.overlays.push(o);
                    if o == Overlay::Throttled {
                        self.message = self.throttle_summary();
                    }
                    // these come from the events and the report
                    if !matches!(
                        o,
                        Overlay::Latency | Overlay::Preemptions | Overlay::WastedIdle
                    ) {
                        self.lanes_only("this overlay");
                    }
                }
            }
        }
    }

    /// What the throttled-periods overlay has to show, for the status line.
    fn throttle_summary(&self) -> String {
        let Some(d) = self.data() else {
            return String::new();
        };
        let t = &d.marks.throttled.info;
        if t.cgroups.is_empty() {
            return "throttled: no cgroup samples in this trace".into();
        }
        let throttled = t
            .cgroups
            .iter()
            .enumerate()
            .filter(|(i, _)| t.periods.iter().any(|p| p.cgroup == *i))
            .count();
        let unplaced = t
            .cgroups
            .iter()
            .enumerate()
            .filter(|(i, c)| c.members.is_empty() && t.periods.iter().any(|p| p.cgroup == *i))
            .count();
        let mut s = format!(
            "throttled periods: {} in {throttled} of {} sampled cgroups",
            t.periods.len(),
            t.cgroups.len()
        );
        if unplaced > 0 {
            s.push_str(&format!(
                "; {unplaced} cgroup(s) with no known member task not shown"
            ));
        }
        s
    }

    /// Filter the lanes to the processes of the selected tasks (or clear
    /// the filter).
    fn toggle_filter(&mut self) {
        if !self.filter.is_empty() {
            self.filter.clear();
            self.message = "filter off".into();
            return;
        }
        if self.selected.is_empty() {
            if let Some(t) = self.task_under_cursor() {
                self.selected = vec![t];
            }
        }
        let Some(d) = self.data() else { return };
        let mut f: Vec<Tid> = self.selected.iter().map(|&t| d.colour_key(t)).collect();
        f.sort_unstable();
        f.dedup();
        self.message = if f.is_empty() {
            "select a task first (s or /)".into()
        } else {
            format!(
                "filter: process {}",
                f.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        self.filter = f;
    }

    fn move_row(&mut self, d: i64) {
        if self.tab == 0 {
            let n = self.lane_rows().len();
            if n > 0 {
                self.lane = (self.lane as i64 + d).clamp(0, n as i64 - 1) as usize;
            }
        } else if let Some(data) = self.data() {
            let n = data.tables.tabs[self.tab - 1].rows.len();
            let r = &mut self.rows[self.tab - 1];
            if n > 0 {
                *r = (*r as i64 + d).clamp(0, n as i64 - 1) as usize;
            }
        }
    }

    fn enter(&mut self) {
        if self.tab == 0 {
            if let Some(LaneRow::Group(g)) = self.lane_rows().get(self.lane) {
                let g = *g;
                if let Some(i) = self.expanded.iter().position(|&x| x == g) {
                    self.expanded.remove(i);
                } else {
                    self.expanded.push(g);
                }
            } else if !self.selected.is_empty() {
                self.step_switch(true, false);
            }
            return;
        }
        let Some(data) = self.data() else { return };
        let tab = &data.tables.tabs[self.tab - 1];
        let Some(row) = tab.rows.get(self.rows[self.tab - 1]) else {
            return;
        };
        let j = match (&row.jump, &row.find) {
            (Some(j), _) => j.clone(),
            (None, Some(f)) => match data.resolve(f) {
                Ok(j) => j,
                Err(why) => {
                    self.message = format!("cannot jump: {why}");
                    return;
                }
            },
            (None, None) => {
                self.message = "this row has no time to jump to".into();
                return;
            }
        };
        let label = j.what.clone();
        self.view.show(j.start, j.end.max(j.start + 1));
        if let Some(t) = j.tid {
            self.selected = vec![t];
        }
        self.tab = 0;
        if let Some(c) = j.cpu {
            if let Some(i) = self
                .lane_rows()
                .iter()
                .position(|r| *r == LaneRow::Cpu(c as usize))
            {
                self.lane = i;
            } else if let Some(g) = self.data().and_then(|d| d.cpu_groups.of_cpu(c as usize)) {
                if let Some(i) = self
                    .lane_rows()
                    .iter()
                    .position(|r| *r == LaneRow::Group(g))
                {
                    self.lane = i;
                }
            }
        }
        self.message = format!("jumped to {label}");
    }

    /// Go to the next (or previous) switch-in of a selected task, after
    /// (before) the cursor; `inclusive` accepts one at the cursor itself.
    fn step_switch(&mut self, forward: bool, inclusive: bool) {
        if self.lanes_only("switch-ins") {
            return;
        }
        if self.selected.is_empty() {
            if let Some(t) = self.task_under_cursor() {
                self.selected = vec![t];
            }
        }
        let Some(d) = self.data() else { return };
        let cur = self.view.cursor;
        let end = d.timeline.end;
        let mut best: Option<(u64, Tid, Option<u32>)> = None;
        for &tid in &self.selected {
            let Some(info) = d.tasks.get(&tid) else {
                continue;
            };
            let ivs = &d.timeline.threads[info.thread].intervals;
            let running = |i: usize| {
                ivs.get(i)
                    .is_some_and(|iv| iv.state == schedscope_analysis::ThreadState::Running)
            };
            let found = if forward {
                let i0 = ivs.partition_point(|iv| {
                    if inclusive {
                        iv.ts.0 < cur
                    } else {
                        iv.ts.0 <= cur
                    }
                });
                (i0..ivs.len()).find(|&i| running(i))
            } else {
                let i0 = ivs.partition_point(|iv| iv.ts.0 < cur);
                (0..i0).rev().find(|&i| running(i))
            };
            if let Some(iv) = found.and_then(|i| ivs.get(i)) {
                let t = iv.ts.0;
                let better = match best {
                    None => true,
                    Some((bt, _, _)) => (forward && t < bt) || (!forward && t > bt),
                };
                if better {
                    best = Some((t, tid, iv.cpu.map(|c| c.0)));
                }
            }
            let _ = end;
        }
        match best {
            Some((t, tid, cpu)) => {
                let label = d.label(tid);
                self.view.center_if_outside(t);
                self.message = format!(
                    "{label} switched in at {}",
                    crate::view::fmt_rel(t.saturating_sub(self.view.lo), self.view.width)
                );
                if let Some(c) = cpu {
                    if let Some(i) = self
                        .lane_rows()
                        .iter()
                        .position(|r| *r == LaneRow::Cpu(c as usize))
                    {
                        self.lane = i;
                    }
                }
            }
            None => {
                self.message = if forward {
                    "no later switch-in".into()
                } else {
                    "no earlier switch-in".into()
                };
            }
        }
    }

    /// The region statistics of A-B (none until the full load: they read
    /// the threads' states).
    fn update_region(&mut self) {
        self.region = match (self.mark_a, self.mark_b, self.data()) {
            (Some(a), Some(b), Some(d)) if a != b && !d.lanes_only() => {
                Some(RegionStats::compute(d, a, b))
            }
            _ => None,
        };
    }

    /// Handle a mouse event: click selects (cursor and lane), wheel zooms,
    /// drag marks a region.
    pub fn on_mouse(&mut self, m: MouseEvent) {
        let r = self.lanes_area;
        let inside =
            m.column >= r.x && m.column < r.x + r.width && m.row >= r.y && m.row < r.y + r.height;
        if self.tab != 0 || !inside || self.data().is_none() {
            return;
        }
        let col = m.column - r.x;
        let (t, _) = self.view.col_range(col, r.width);
        match m.kind {
            MouseEventKind::ScrollUp => {
                self.view.cursor = t;
                self.view.zoom(0.5);
            }
            MouseEventKind::ScrollDown => {
                self.view.cursor = t;
                self.view.zoom(2.0);
            }
            MouseEventKind::Down(MouseButton::Left) => {
                self.view.cursor = t;
                let row = self.lane_scroll + usize::from(m.row - r.y);
                if row < self.lane_rows().len() {
                    self.lane = row;
                }
                self.drag_from = Some(t);
            }
            MouseEventKind::Up(MouseButton::Left) => {
                if let Some(from) = self.drag_from.take() {
                    if from != t {
                        self.mark_a = Some(from.min(t));
                        self.mark_b = Some(from.max(t));
                        self.update_region();
                    }
                }
            }
            _ => {}
        }
    }
}
