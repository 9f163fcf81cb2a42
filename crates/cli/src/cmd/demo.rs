//! `schedscope demo`.

use crate::args::DemoArgs;
use std::process::ExitCode;

/// Run `schedscope demo`.
pub fn run(_args: DemoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`schedscope demo` is not built yet")
}
