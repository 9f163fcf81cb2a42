//! The terminal: raw mode, alternate screen and mouse capture on entry,
//! all restored on exit, on error and on panic; the event loop that
//! redraws on input and on messages from the loading job.

use crate::app::App;
use crate::data::{spawn, CacheUse, LoadMsg, Source};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use std::io;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Environment variable that makes the draw loop panic once the trace is
/// loaded (only for the test that the terminal is restored on panic).
pub const TEST_PANIC: &str = "SCHEDSCOPE_TUI_TEST_PANIC";

/// Put the terminal back as it was (idempotent, errors ignored: this also
/// runs from the panic hook).
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
}

/// Restores the terminal when dropped (normal exit and `?` errors).
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Hand one terminal event to the app.
fn dispatch(app: &mut App, ev: Event) {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => app.on_key(k),
        Event::Mouse(m) => app.on_mouse(m),
        _ => {}
    }
}

/// Wait up to `timeout` for terminal input (true) or, while loading (`rx`),
/// for a message of the loading job (put in `got`, false): the full data
/// or a preview is drawn when it arrives, not at the end of the wait.
fn wait(
    timeout: Duration,
    rx: Option<&Receiver<LoadMsg>>,
    got: &mut Vec<LoadMsg>,
) -> io::Result<bool> {
    let Some(rx) = rx else {
        return event::poll(timeout);
    };
    let t0 = Instant::now();
    loop {
        let left = timeout.saturating_sub(t0.elapsed());
        if event::poll(left.min(Duration::from_millis(20)))? {
            return Ok(true);
        }
        if let Ok(m) = rx.try_recv() {
            got.push(m);
            return Ok(false);
        }
        if left.is_zero() {
            return Ok(false);
        }
    }
}

/// Run the TUI on `path` (shown in the status line), decoding it with
/// `loader` on a background thread, the lanes first from `cache` when it
/// holds them. Returns the loading error, if loading failed (the UI showed
/// it until the user quit).
pub fn run(
    path: &str,
    loader: impl Into<Source>,
    cache: Option<CacheUse>,
) -> io::Result<Option<String>> {
    let file_size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        prev(info);
    }));
    enable_raw_mode()?;
    let _guard = Guard;
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    terminal.clear()?;
    let job = spawn(loader, cache);
    let rx = &job.rx;
    let mut app = App::new(path, file_size, no_color);
    app.progress = Some(std::sync::Arc::clone(&job.progress));
    let mut loading = true;
    // Test hook (crates/cli/tests/tui_tmux.rs): panic inside the draw loop
    // once the trace is shown, to check that the panic hook restores the
    // terminal.
    let test_panic = std::env::var_os(TEST_PANIC).is_some();
    loop {
        terminal.draw(|f| {
            crate::draw::draw(f, &mut app);
            if test_panic && matches!(app.load, crate::app::Load::Ready(_)) {
                panic!("{TEST_PANIC} is set: panic inside the draw loop");
            }
        })?;
        if app.quit {
            break;
        }
        // while loading, wake up every 100 ms to show progress; every
        // 250 ms when the cached lanes or a preview are drawn (a frame of
        // a whole trace costs more than the loading screen and takes from
        // the load)
        let timeout = if app.pending.is_some() {
            Duration::from_millis(250)
        } else if loading {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(3600)
        };
        let mut got = Vec::new();
        if wait(timeout, loading.then_some(rx), &mut got)? {
            dispatch(&mut app, event::read()?);
            // take every queued event before drawing again
            while !app.quit && event::poll(Duration::ZERO)? {
                dispatch(&mut app, event::read()?);
            }
        }
        for msg in got.into_iter().chain(rx.try_iter()) {
            if matches!(
                msg,
                crate::data::LoadMsg::Done(_) | crate::data::LoadMsg::Failed(_)
            ) {
                loading = false;
            }
            app.on_load(msg);
        }
        if app.quit {
            break;
        }
    }
    if !loading {
        // the load is done: let it finish writing the lane cache (a quit
        // while loading leaves at once, without a cache)
        drop(_guard);
        let _ = job.thread.join();
    }
    Ok(match app.load {
        crate::app::Load::Failed(e) => Some(e),
        _ => None,
    })
}
