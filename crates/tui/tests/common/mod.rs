//! Shared test data: a tiny hand-made timeline with known content, the
//! simulator fixtures, and drawing into ratatui's TestBackend.

#![allow(dead_code)]

use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use schedscope_analysis::timeline::Intervals;
use schedscope_analysis::{
    CpuRun, Options, Report, Sections, StateInterval, ThreadState, ThreadTimeline, Timeline,
};
use schedscope_trace::{Cpu, Tid, Trace, TraceFormat, Ts};
use schedscope_tui::{App, Data};

fn iv(ts: u64, end: u64, state: ThreadState, cpu: Option<u32>, preempted: bool) -> StateInterval {
    StateInterval {
        ts: Ts(ts),
        end: Some(Ts(end)),
        state,
        cpu: cpu.map(Cpu),
        preempted,
        waker: None,
    }
}

fn run(ts: u64, end: u64, tid: i32) -> CpuRun {
    CpuRun {
        ts: Ts(ts),
        end: Some(Ts(end)),
        tid: Tid(tid),
    }
}

/// A 1000 ns trace on 2 CPUs:
/// - alpha (tid 100, pid 100) runs on CPU0 [0, 500), then is preempted
///   and waits (Runnable on CPU0) [500, 1000) while CPU0 idles;
/// - beta (tid 200, pid 200) sleeps [0, 100), is woken and waits on CPU1
///   [100, 250) (a 150 ns wakeup latency), runs on CPU1 [250, 1000);
/// - CPU1 is idle [0, 250).
pub fn tiny_timeline() -> Timeline {
    let mut tl = Timeline::default();
    tl.start = Ts(0);
    tl.end = Ts(1000);
    tl.threads = vec![
        ThreadTimeline {
            tid: Tid(100),
            tgid: Some(Tid(100)),
            comm: "alpha".into(),
            intervals: Intervals::from(vec![
                iv(0, 500, ThreadState::Running, Some(0), false),
                iv(500, 1000, ThreadState::Runnable, Some(0), true),
            ]),
        },
        ThreadTimeline {
            tid: Tid(200),
            tgid: Some(Tid(200)),
            comm: "beta".into(),
            intervals: Intervals::from(vec![
                iv(0, 100, ThreadState::Sleeping, None, false),
                iv(100, 250, ThreadState::Runnable, Some(1), false),
                iv(250, 1000, ThreadState::Running, Some(1), false),
            ]),
        },
    ];
    tl.cpus = vec![
        [run(0, 500, 100), run(500, 1000, 0)].into_iter().collect(),
        [run(0, 250, 0), run(250, 1000, 200)].into_iter().collect(),
    ];
    tl
}

/// A report with no sections (the tiny timeline has no trace events).
pub fn empty_report() -> Report {
    let trace = Trace::new("tiny", TraceFormat::PerfData);
    Report::compute(&trace, Sections::default(), &Options::default())
}

/// The tiny trace as an app.
pub fn tiny_app(no_color: bool) -> App {
    App::with_data(
        "tiny.data",
        Data::new(tiny_timeline(), empty_report()),
        no_color,
    )
}

/// A repository fixture, decoded and analysed like `schedscope tui` does.
pub fn fixture_app(rel: &str) -> App {
    let path = format!("{}/../../fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    let trace = schedscope_parser::load(std::path::Path::new(&path)).expect("fixture loads");
    let data = Data::from_trace(trace, &|_| {});
    App::with_data(&path, data, false)
}

/// Its truth file.
pub fn truth(rel: &str) -> serde_json::Value {
    let path = format!("{}/../../fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("truth file")).expect("truth json")
}

/// Draw `app` at `w` x `h` and return the screen as lines.
pub fn screen(app: &mut App, w: u16, h: u16) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| schedscope_tui::draw::draw(f, app))
        .expect("draw");
    let buf = term.backend().buffer().clone();
    (0..h)
        .map(|y| {
            (0..w)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect()
}

/// Draw and return the buffer itself (for styles).
pub fn buffer(app: &mut App, w: u16, h: u16) -> ratatui::buffer::Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| schedscope_tui::draw::draw(f, app))
        .expect("draw");
    term.backend().buffer().clone()
}

/// Press a key.
pub fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

/// Type characters.
pub fn keys(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}
