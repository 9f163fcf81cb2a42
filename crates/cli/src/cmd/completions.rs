//! `schedscope completions SHELL` and `schedscope man`: the shell
//! completion scripts (clap_complete) and the man pages (clap_mangen),
//! generated from the same command-line definition as the parser, so they
//! never fall behind the flags.

use crate::args::{Cli, CompletionsArgs, ManArgs};
use crate::ExitError;
use clap::CommandFactory;
use std::io::Write;
use std::process::ExitCode;

/// Print the completion script for `a.shell` on standard output.
pub fn completions(a: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(a.shell, &mut cmd, "schedscope", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Print schedscope(1), or a subcommand's page, on standard output; with
/// `--dir`, write every page there.
pub fn man(a: ManArgs) -> anyhow::Result<ExitCode> {
    // (no page for clap's `help` subcommand, as clap_mangen::generate_to)
    let mut cmd = Cli::command().disable_help_subcommand(true);
    // (names the subcommands' pages schedscope-SUBCOMMAND)
    cmd.build();
    if let Some(dir) = &a.dir {
        std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(cmd, dir))
            .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let page = match &a.subcommand {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) => sub.clone(),
            None => {
                let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
                return Err(ExitError {
                    code: 2,
                    message: format!("man: no subcommand '{name}' (one of: {})", names.join(", ")),
                }
                .into());
            }
        },
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
