//! `schedscope report`.

use crate::args::ReportArgs;
use std::process::ExitCode;

/// Run `schedscope report`.
pub fn run(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`schedscope report` is not built yet")
}
