//! `schedscope info`.

use crate::args::InfoArgs;
use std::process::ExitCode;

/// Run `schedscope info`.
pub fn run(_args: InfoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`schedscope info` is not built yet")
}
