//! `schedscope tui`: the interactive timeline (crates/tui). This module
//! only checks the input and hands the TUI a loader that decodes the file
//! on the TUI's background thread.

use crate::args::TuiArgs;
use crate::ExitError;
use std::io::IsTerminal;
use std::process::ExitCode;

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
    // Decode only what the report's sections read (as `report --all`):
    // the lanes are drawn from the timeline, which reads a subset of them.
    // The events pane prints every field of the untyped events kept (such
    // as sched_stat_runtime's comm): +4 MB RSS (5%) and no measurable time
    // on a 410k-event recording with sched_stat_runtime, nothing without.
    let mut opts = crate::cmd::report::load_options(&schedscope_analysis::Sections::all());
    opts.raw_fields = true;
    let loader: schedscope_tui::Loader =
        Box::new(move || schedscope_parser::load_with(&path, &opts).map_err(|e| e.to_string()));
    match schedscope_tui::run(&shown, loader)? {
        None => Ok(ExitCode::SUCCESS),
        Some(e) => Err(ExitError {
            code: 1,
            message: e,
        }
        .into()),
    }
}
