//! `schedscope record`.

use crate::args::RecordArgs;
use std::process::ExitCode;

/// Run `schedscope record`.
pub fn run(_args: RecordArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`schedscope record` is not built yet")
}
