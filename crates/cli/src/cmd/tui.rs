//! `schedscope tui`: the interactive timeline (crates/tui). This module
//! only checks the input and hands the TUI a loader that decodes the file
//! on the TUI's background thread (streaming a perf.data file, so that the
//! TUI previews the part decoded so far; counting the bytes decoded for
//! the progress display), and where the lane cache is.

use crate::args::TuiArgs;
use crate::ExitError;
use std::io::IsTerminal;
use std::process::ExitCode;

/// Environment variable that makes the TUI's load wait an hour before
/// decoding (only for the test that a second open draws the cached lanes).
pub const TEST_HOLD_LOAD: &str = "SCHEDSCOPE_TUI_TEST_HOLD_LOAD";

/// Environment variable that makes the TUI's load wait an hour once the
/// file is decoded, before the analyses (only for the test that a first
/// open draws the preview).
pub const TEST_HOLD_ANALYSES: &str = "SCHEDSCOPE_TUI_TEST_HOLD_ANALYSES";

/// Run the TUI on `a.file`; exit code 1 when the file could not be loaded.
pub fn run(a: TuiArgs) -> anyhow::Result<ExitCode> {
    let path = a.file;
    // a clear error before the screen switches, for the common mistakes
    if let Err(e) = std::fs::metadata(&path) {
        return Err(ExitError {
            code: 1,
            message: format!("{}: {e}", path.display()),
        }
        .into());
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(ExitError {
            code: 2,
            message: "tui needs a terminal (use `schedscope report` for text or JSON)".into(),
        }
        .into());
    }
    let shown = path.display().to_string();
    // standard input has no size or mtime to key a cache with
    let cache = (!a.no_cache && path != std::path::Path::new("-"))
        .then(schedscope_tui::cache::default_dir)
        .flatten()
        .map(|dir| schedscope_tui::CacheUse {
            trace: path.clone(),
            dir,
        });
    // Decode only what the report's sections read (as `report --all`):
    // the lanes are drawn from the timeline, which reads a subset of them.
    // The events pane prints every field of the untyped events kept (such
    // as sched_stat_runtime's comm): +4 MB RSS (5%) and no measurable time
    // on a 410k-event recording with sched_stat_runtime, nothing without.
    let mut opts = crate::cmd::report::load_options(&schedscope_analysis::Sections::all());
    opts.raw_fields = true;
    // test hook (crates/cli/tests/tui_tmux.rs): hold the load back, so
    // that what the screen shows comes from the lane cache
    let hold = std::env::var_os(TEST_HOLD_LOAD).is_some();
    // ... or once decoded, so that what it shows is the preview
    let hold_after = std::env::var_os(TEST_HOLD_ANALYSES).is_some();
    let loader: schedscope_tui::StreamLoader = Box::new(move |decoded, preview| {
        let hour = std::time::Duration::from_secs(3600);
        if hold {
            std::thread::sleep(hour);
        }
        let trace = schedscope_tui::preview::load(&path, &opts, decoded, preview);
        if hold_after {
            preview.show_now();
            std::thread::sleep(hour);
        }
        trace
    });
    match schedscope_tui::run(&shown, loader, cache)? {
        None => Ok(ExitCode::SUCCESS),
        Some(e) => Err(ExitError {
            code: 1,
            message: e,
        }
        .into()),
    }
}
