//! The key handling state machine, driven without drawing.

mod common;

use common::*;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use schedscope_analysis::{CpuRun, Timeline};
use schedscope_trace::{Tid, Ts};
use schedscope_tui::app::LaneRow;
use schedscope_tui::{App, Data};

#[test]
fn zoom_pan_start_end_and_fit() {
    let mut app = tiny_app(false);
    app.columns = 100;
    assert_eq!((app.view.start, app.view.width), (0, 1000));
    keys(&mut app, ".....");
    assert_eq!(app.view.cursor, 50);
    keys(&mut app, "+");
    assert_eq!(app.view.width, 500);
    // the cursor keeps its place on screen: 5% from the left
    assert_eq!(app.view.cursor - app.view.start, 25);
    keys(&mut app, "l");
    assert_eq!(app.view.start, 25 + 62);
    keys(&mut app, "h");
    keys(&mut app, "h");
    assert_eq!(app.view.start, 0, "panning stops at the trace start");
    key(&mut app, KeyCode::End);
    assert_eq!((app.view.end(), app.view.cursor), (1000, 999));
    keys(&mut app, "g");
    assert_eq!((app.view.start, app.view.cursor), (0, 0));
    keys(&mut app, "-");
    keys(&mut app, "-");
    assert_eq!(app.view.width, 1000, "zoom out stops at the whole trace");
    keys(&mut app, "++++0");
    assert_eq!(app.view.width, 1000);
}

#[test]
fn markers_lanes_and_tabs() {
    let mut app = tiny_app(false);
    keys(&mut app, "a");
    assert!(app.region.is_none(), "one marker is no region");
    key(&mut app, KeyCode::End);
    keys(&mut app, "b");
    assert_eq!(app.region.as_ref().map(|r| (r.a, r.b)), Some((0, 999)));
    keys(&mut app, "x");
    assert!(app.region.is_none() && app.mark_a.is_none());
    // lanes: CPU0, its strip, CPU1, its strip; p hides the strips
    assert_eq!(app.lane_rows().len(), 4);
    keys(&mut app, "jjjjjj");
    assert_eq!(app.lane, 3);
    keys(&mut app, "p");
    assert_eq!(app.lane_rows(), vec![LaneRow::Cpu(0), LaneRow::Cpu(1)]);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.tab, 1);
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::BackTab);
    assert_eq!(app.tab, 5);
    keys(&mut app, "1");
    assert_eq!(app.tab, 0);
}

#[test]
fn search_selects_tasks_and_steps_through_their_switch_ins() {
    let mut app = tiny_app(false);
    keys(&mut app, "/bet");
    assert!(app.search.typing);
    keys(&mut app, "a");
    key(&mut app, KeyCode::Enter);
    assert!(!app.search.typing);
    assert_eq!(app.selected, vec![200]);
    // beta switches in at 250 on CPU1
    assert_eq!(app.view.cursor, 250);
    assert_eq!(app.lane_rows()[app.lane], LaneRow::Cpu(1));
    keys(&mut app, "n");
    assert_eq!(app.view.cursor, 250, "no later switch-in");
    assert_eq!(app.message, "no later switch-in");
    // by tid; the search also matches a tid exactly
    keys(&mut app, "/100");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.selected, vec![100]);
    keys(&mut app, "N");
    assert_eq!(app.view.cursor, 0, "alpha switched in at 0");
    keys(&mut app, "/nomatch");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.message, "no task matches 'nomatch'");
    // 'q' is a character while typing a search
    keys(&mut app, "/q");
    assert!(!app.quit);
    key(&mut app, KeyCode::Backspace);
    key(&mut app, KeyCode::Enter);
}

#[test]
fn task_lanes_follow_the_selection() {
    let mut app = tiny_app(false);
    app.columns = 100;
    keys(&mut app, "s");
    assert_eq!(app.selected, vec![100], "alpha is under the cursor on CPU0");
    keys(&mut app, "t");
    assert_eq!(app.lane_rows().last(), Some(&LaneRow::Task(100)));
    let s = screen(&mut app, 108, 12);
    // Running [0, 500) then Runnable [500, 1000)
    assert_eq!(
        s[6],
        format!("alpha   {}{}", "█".repeat(50), "▒".repeat(50))
    );
}

#[test]
fn quit_keys_quit_from_anywhere() {
    for k in [
        KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE),
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
    ] {
        for setup in ["", "?", "3", "/ab"] {
            let mut app = tiny_app(false);
            keys(&mut app, setup);
            app.on_key(k);
            // in the search prompt 'q' is typed, Ctrl-C still quits
            let typed_q = setup.starts_with('/') && k.code == KeyCode::Char('q');
            assert_eq!(app.quit, !typed_q, "{k:?} after {setup:?}");
            if typed_q {
                assert_eq!(app.search.query, "abq");
            }
        }
    }
    // quitting works while loading too
    let mut app = App::new("x", 0, false);
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

#[test]
fn esc_closes_the_help_and_the_search_prompt_and_never_quits() {
    let mut app = tiny_app(false);
    // the help: Esc closes it, and the next Esc does not quit either
    keys(&mut app, "?");
    assert!(app.help);
    key(&mut app, KeyCode::Esc);
    assert!(!app.help && !app.quit);
    key(&mut app, KeyCode::Esc);
    assert!(!app.quit, "Esc on the timeline does not quit");
    assert!(app.message.contains("q quits"), "{}", app.message);
    // any other key still closes the help without acting...
    keys(&mut app, "?");
    let tab = app.tab;
    keys(&mut app, "3");
    assert!(!app.help && !app.quit);
    assert_eq!(
        app.tab, tab,
        "the key that closed the help did nothing else"
    );
    // ...and q closes it and quits
    keys(&mut app, "?q");
    assert!(!app.help && app.quit);

    // the search prompt: Esc cancels the query, nothing is selected, and
    // keys act as keys again
    let mut app = tiny_app(false);
    keys(&mut app, "/alp");
    assert!(app.search.typing);
    key(&mut app, KeyCode::Esc);
    assert!(!app.search.typing && !app.quit);
    assert!(app.search.query.is_empty());
    assert!(app.selected.is_empty());
    keys(&mut app, "2");
    assert_eq!(app.tab, 1, "'2' switches tabs once the prompt is closed");
    // the status line no longer shows the prompt
    let s = screen(&mut app, 100, 12);
    assert!(!s[11].starts_with('/'), "{}", s[11]);
    // while typing, the prompt says what Esc does
    keys(&mut app, "/x");
    let s = screen(&mut app, 100, 12);
    assert!(
        s[11].starts_with("/x_  (Enter: search, Esc: cancel)"),
        "{}",
        s[11]
    );
    // Esc in the help drawn over the prompt's screen closes only the help
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "?");
    let s = screen(&mut app, 100, 40);
    assert!(s
        .iter()
        .any(|l| l.contains("close the help or the search prompt")));
    key(&mut app, KeyCode::Esc);
    let s = screen(&mut app, 100, 40);
    assert!(!s
        .iter()
        .any(|l| l.contains("close the help or the search prompt")));
    assert!(!app.quit);
}

#[test]
fn many_cpus_group_in_eights_and_expand_on_enter() {
    let mut tl = Timeline::default();
    tl.start = Ts(0);
    tl.end = Ts(1000);
    tl.cpus = (0..40)
        .map(|_| {
            vec![CpuRun {
                ts: Ts(0),
                end: Some(Ts(1000)),
                tid: Tid(0),
            }]
            .into()
        })
        .collect();
    let mut app = App::with_data("many", Data::new(tl, empty_report()), false);
    let rows = app.lane_rows();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0], LaneRow::Group(0));
    assert_eq!(rows[4], LaneRow::Group(4));
    keys(&mut app, "j");
    key(&mut app, KeyCode::Enter);
    let rows = app.lane_rows();
    assert_eq!(rows.len(), 5 + 16, "8 CPUs with their strips");
    assert_eq!(rows[2], LaneRow::Cpu(8));
    let s = screen(&mut app, 160, 30);
    assert!(
        s[29].contains("| CPUs in groups of 8 (no topology in the trace)"),
        "{}",
        s[29]
    );
    assert!(s[2].starts_with("+0-7"), "{}", s[2]);
    assert!(s[3].starts_with("-8-15"), "{}", s[3]);
    assert!(s[4].starts_with("CPU8"), "{}", s[4]);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.lane_rows().len(), 5);
}

#[test]
fn mouse_click_selects_wheel_zooms_drag_marks() {
    use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut app = tiny_app(false);
    screen(&mut app, 108, 12); // lays out the lane area: x 8.., y 2..
    let ev = |kind, column, row| MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    app.on_mouse(ev(MouseEventKind::Down(MouseButton::Left), 8 + 30, 4));
    assert_eq!(app.view.cursor, 300);
    assert_eq!(app.lane_rows()[app.lane], LaneRow::Cpu(1));
    app.on_mouse(ev(MouseEventKind::Up(MouseButton::Left), 8 + 60, 4));
    assert_eq!((app.mark_a, app.mark_b), (Some(300), Some(600)));
    assert!(app.region.is_some());
    app.on_mouse(ev(MouseEventKind::ScrollUp, 8 + 50, 4));
    assert_eq!(app.view.width, 500);
    assert_eq!(app.view.cursor, 500);
}

#[test]
fn filter_dims_other_processes() {
    let mut app = tiny_app(true);
    keys(&mut app, "/beta");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "f");
    assert_eq!(app.filter, vec![200]);
    let s = screen(&mut app, 108, 12);
    assert_eq!(
        s[2],
        format!("CPU0    {}{}", "░".repeat(50), " ".repeat(50))
    );
    assert!(s[4].ends_with("A1A1A"), "{}", s[4]);
    keys(&mut app, "f");
    assert!(app.filter.is_empty());
}

#[test]
fn an_empty_timeline_takes_every_key_without_panicking() {
    let mut app = App::with_data(
        "empty",
        Data::new(Timeline::default(), empty_report()),
        false,
    );
    for s in [
        "+", "-", "0", "h", "l", ",", ".", "g", "G", "j", "k", "a", "b", "s", "t", "f", "n", "N",
        "w", "e", "i", "p",
    ] {
        keys(&mut app, s);
        for (w, h) in [(1, 1), (20, 5), (80, 24)] {
            let lines = screen(&mut app, w, h);
            assert_eq!(lines.len(), usize::from(h));
        }
    }
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "/x");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.message, "no task matches 'x'");
    for t in ["2", "3", "4", "5", "6"] {
        keys(&mut app, t);
        key(&mut app, KeyCode::Enter);
        screen(&mut app, 80, 24);
    }
}

#[test]
fn cpu_filter_shows_one_cpu() {
    let mut app = tiny_app(true);
    keys(&mut app, "jj");
    keys(&mut app, "c");
    assert_eq!(app.lane_rows(), vec![LaneRow::Cpu(1), LaneRow::Pressure(1)]);
    assert_eq!(app.message, "only CPU1");
    let s = screen(&mut app, 108, 12);
    assert!(s[2].starts_with("CPU1"), "{}", s[2]);
    keys(&mut app, "c");
    assert_eq!(app.lane_rows().len(), 4);
}

/// A generated 64-CPU trace of two packages (CPUs 0-15,32-47 and
/// 16-31,48-63, as sysfs lists SMT siblings n and n + 32) where task 500
/// runs on CPU 40 and task 600 on CPU 20 for the whole trace.
fn two_package_trace(with_topology: bool) -> schedscope_trace::Trace {
    use schedscope_trace::{CpuTopology, Event, EventData, PrevState, Trace, TraceFormat};
    let mut t = Trace::new("gen64", TraceFormat::PerfData);
    let name = t.intern_name("sched:sched_switch");
    for (ts, cpu, prev, next) in [
        (0, 40, 0, 500),
        (0, 20, 0, 600),
        (1_000_000, 40, 500, 0),
        (1_000_000, 20, 600, 0),
    ] {
        let (pc, nc) = (t.strings.intern("p"), t.strings.intern("n"));
        t.tasks.set_comm(Tid(500), "five");
        t.tasks.set_comm(Tid(600), "six");
        t.events.push(Event {
            ts: Ts(ts),
            cpu: schedscope_trace::Cpu(cpu),
            tid: Tid(prev),
            name,
            stack: schedscope_trace::StackId::NONE,
            data: EventData::Switch {
                prev_tid: Tid(prev),
                prev_prio: 120,
                prev_state: PrevState::parse_text("S").unwrap(),
                prev_comm: pc,
                next_tid: Tid(next),
                next_prio: 120,
                next_comm: nc,
            },
        });
    }
    *t.events_by_name
        .entry("sched:sched_switch".into())
        .or_default() += 4;
    t.nr_cpus = 64;
    if with_topology {
        t.topology = Some(CpuTopology::two_packages_example());
    }
    t.finish();
    t
}

#[test]
fn sixty_four_cpus_group_by_package_from_the_topology() {
    let data = Data::from_trace(two_package_trace(true), &|_| {});
    assert_eq!(data.lanes.cpus.len(), 64);
    let mut app = App::with_data("gen64", data, false);
    let rows = app.lane_rows();
    assert_eq!(rows, vec![LaneRow::Group(0), LaneRow::Group(1)]);
    let s = screen(&mut app, 160, 20);
    assert!(s[2].starts_with("+pkg0 "), "{}", s[2]);
    assert!(s[3].starts_with("+pkg1 "), "{}", s[3]);
    assert!(s[19].contains("| CPUs grouped by package"), "{}", s[19]);
    // the detail line names the group's CPUs
    assert!(
        s[18].starts_with("pkg0 @") && s[18].contains("32 CPUs (0-15,32-47), 1 running a task"),
        "{}",
        s[18]
    );
    // expand package 1: its CPUs in order 16..31, 48..63
    keys(&mut app, "j");
    key(&mut app, KeyCode::Enter);
    let cpus: Vec<usize> = app
        .lane_rows()
        .iter()
        .filter_map(|r| match r {
            LaneRow::Cpu(c) => Some(*c),
            _ => None,
        })
        .collect();
    let want: Vec<usize> = (16..32).chain(48..64).collect();
    assert_eq!(cpus, want);
    // the group lane shows the busy CPU's task across the trace: 1 of 32
    // CPUs busy is an eighth block in the task's colour
    let s = screen(&mut app, 160, 20);
    assert!(s[3].starts_with("-pkg1   ▁"), "{}", s[3]);
    // jumps to a CPU of a collapsed group select the group: CPU 40 is in pkg0
    key(&mut app, KeyCode::Enter); // collapse package 1 again
    assert_eq!(app.data().unwrap().cpu_groups.of_cpu(40), Some(0));
    assert_eq!(app.data().unwrap().cpu_groups.of_cpu(20), Some(1));
}

#[test]
fn sixty_four_cpus_without_topology_keep_groups_of_eight() {
    let data = Data::from_trace(two_package_trace(false), &|_| {});
    let mut app = App::with_data("gen64", data, false);
    assert_eq!(app.lane_rows().len(), 8);
    let s = screen(&mut app, 160, 20);
    assert!(s[2].starts_with("+0-7 "), "{}", s[2]);
    assert!(
        s[19].contains("| CPUs in groups of 8 (no topology in the trace)"),
        "{}",
        s[19]
    );
}
