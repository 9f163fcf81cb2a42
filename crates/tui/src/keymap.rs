//! Keys -> [`Action`]s. The help overlay is generated from [`BINDINGS`], so
//! it always says what the keys do.

use crate::overlay::Overlay;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A UI intent, apart from the trace data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Leave, restoring the terminal.
    Quit,
    /// Close the help or the search prompt (Esc); never quits.
    Close,
    /// Show or hide the key help.
    Help,
    /// Zoom in around the cursor.
    ZoomIn,
    /// Zoom out around the cursor.
    ZoomOut,
    /// Show the whole trace.
    Fit,
    /// Pan the window left.
    PanLeft,
    /// Pan the window right.
    PanRight,
    /// Cursor one column left.
    CursorLeft,
    /// Cursor one column right.
    CursorRight,
    /// Jump to the trace start.
    Start,
    /// Jump to the trace end.
    End,
    /// Previous lane (timeline) or row (tables).
    Up,
    /// Next lane (timeline) or row (tables).
    Down,
    /// Marker A at the cursor.
    MarkA,
    /// Marker B at the cursor.
    MarkB,
    /// Remove both markers.
    ClearMarks,
    /// Next tab.
    NextTab,
    /// Previous tab.
    PrevTab,
    /// Go to tab N (0 = timeline).
    Tab(u8),
    /// Tables: jump the timeline to the row; timeline: expand or collapse
    /// a CPU group, or step to the next search match.
    Enter,
    /// Previous search match.
    ShiftEnter,
    /// Next switch-in of the selected task(s).
    Next,
    /// Previous switch-in of the selected task(s).
    Prev,
    /// Search tasks by comm or tid.
    Search,
    /// Select the task under the cursor.
    Select,
    /// Toggle the Runnable-pressure strips.
    Pressure,
    /// Toggle the lanes of the selected tasks.
    TaskLanes,
    /// Toggle an overlay strip.
    Overlay(Overlay),
    /// Filter the lanes to the selected tasks' processes, or clear it.
    Filter,
    /// Show only the selected CPU's lanes, or all again.
    CpuFilter,
    /// Toggle the pane of the events under the cursor.
    Events,
}

/// One key binding, as the help overlay lists it.
pub struct Binding {
    /// Keys, as written in the help.
    pub keys: &'static str,
    /// What it does.
    pub help: &'static str,
    /// The action.
    pub action: Action,
    /// The key codes (without modifiers unless `ctrl`/`shift`).
    pub codes: &'static [KeyCode],
    /// Needs Ctrl.
    pub ctrl: bool,
}

const fn b(
    keys: &'static str,
    help: &'static str,
    action: Action,
    codes: &'static [KeyCode],
) -> Binding {
    Binding {
        keys,
        help,
        action,
        codes,
        ctrl: false,
    }
}

use KeyCode::{BackTab, Char, Down, End, Enter, Esc, Home, Left, Right, Tab, Up};

/// Every binding, in help order. An entry without `keys` continues the
/// line above in the help (so that the help fits 80x24).
pub const BINDINGS: &[Binding] = &[
    b("q ^C", "quit", Action::Quit, &[Char('q')]),
    Binding {
        keys: "",
        help: "",
        action: Action::Quit,
        codes: &[Char('c')],
        ctrl: true,
    },
    b(
        "? / Esc",
        "this help / close the help or the search prompt",
        Action::Help,
        &[Char('?')],
    ),
    b("", "", Action::Close, &[Esc]),
    b(
        "+ = / - / 0",
        "zoom in / out around the cursor / whole trace",
        Action::ZoomIn,
        &[Char('+'), Char('=')],
    ),
    b("", "", Action::ZoomOut, &[Char('-'), Char('_')]),
    b("", "", Action::Fit, &[Char('0')]),
    b(
        "<- h / -> l",
        "pan left / right",
        Action::PanLeft,
        &[Left, Char('h')],
    ),
    b("", "", Action::PanRight, &[Right, Char('l')]),
    b(
        ", / .",
        "cursor one column left / right",
        Action::CursorLeft,
        &[Char(',')],
    ),
    b("", "", Action::CursorRight, &[Char('.')]),
    b(
        "Home g / End G",
        "jump to start / end",
        Action::Start,
        &[Home, Char('g')],
    ),
    b("", "", Action::End, &[End, Char('G')]),
    b(
        "up k / down j",
        "previous / next lane or row",
        Action::Up,
        &[Up, Char('k')],
    ),
    b("", "", Action::Down, &[Down, Char('j')]),
    b(
        "a / b / x",
        "marker A / B at the cursor; clear",
        Action::MarkA,
        &[Char('a')],
    ),
    b("", "", Action::MarkB, &[Char('b')]),
    b("", "", Action::ClearMarks, &[Char('x')]),
    b(
        "Tab / S-Tab",
        "next / previous tab",
        Action::NextTab,
        &[Tab],
    ),
    b("", "", Action::PrevTab, &[BackTab]),
    b(
        "1-6",
        "timeline, latency, gang, lhp, idle, tlb",
        Action::Tab(0),
        &[Char('1')],
    ),
    b("", "", Action::Tab(1), &[Char('2')]),
    b("", "", Action::Tab(2), &[Char('3')]),
    b("", "", Action::Tab(3), &[Char('4')]),
    b("", "", Action::Tab(4), &[Char('5')]),
    b("", "", Action::Tab(5), &[Char('6')]),
    b(
        "Enter",
        "table: jump to row; lanes: next match / expand",
        Action::Enter,
        &[Enter],
    ),
    b(
        "/",
        "search tasks by comm or tid",
        Action::Search,
        &[Char('/')],
    ),
    b(
        "n / N",
        "next / previous switch-in of the selection",
        Action::Next,
        &[Char('n')],
    ),
    b("", "", Action::Prev, &[Char('N')]),
    b(
        "s / t",
        "select task under cursor / its lanes",
        Action::Select,
        &[Char('s')],
    ),
    b("", "", Action::TaskLanes, &[Char('t')]),
    b(
        "f / c",
        "filter: selection's processes / this CPU only",
        Action::Filter,
        &[Char('f')],
    ),
    b("", "", Action::CpuFilter, &[Char('c')]),
    b(
        "p / d",
        "wait strips / events under the cursor",
        Action::Pressure,
        &[Char('p')],
    ),
    b("", "", Action::Events, &[Char('d')]),
    b(
        "w / e / i / r",
        "overlays: latency / preemptions / wasted idle / throttled",
        Action::Overlay(Overlay::Latency),
        &[Char('w')],
    ),
    b("", "", Action::Overlay(Overlay::Preemptions), &[Char('e')]),
    b("", "", Action::Overlay(Overlay::WastedIdle), &[Char('i')]),
    b("", "", Action::Overlay(Overlay::Throttled), &[Char('r')]),
    b(
        "v / o / u",
        "overlays: PLE exits / IPIs, TLB shootdowns / gang fragments",
        Action::Overlay(Overlay::PleExits),
        &[Char('v')],
    ),
    b("", "", Action::Overlay(Overlay::Ipis), &[Char('o')]),
    b(
        "",
        "",
        Action::Overlay(Overlay::GangFragments),
        &[Char('u')],
    ),
];

/// The action bound to `key`, if any.
pub fn action_for(key: KeyEvent) -> Option<Action> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if key.code == Enter && key.modifiers.contains(KeyModifiers::SHIFT) {
        return Some(Action::ShiftEnter);
    }
    BINDINGS
        .iter()
        .find(|bd| bd.ctrl == ctrl && bd.codes.contains(&key.code))
        .map(|bd| bd.action)
}

/// Help lines: `keys  what`, from [`BINDINGS`] (continuation entries
/// without keys are folded into the line above).
pub fn help_lines() -> Vec<(String, String)> {
    BINDINGS
        .iter()
        .filter(|bd| !bd.keys.is_empty())
        .map(|bd| (bd.keys.to_string(), bd.help.to_string()))
        .collect()
}
