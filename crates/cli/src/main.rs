//! `schedscope`: record what the Linux scheduler did and explain it.
//!
//! Thin glue: clap parses the command line into the structs of [`args`],
//! each subcommand lives in its own module under [`cmd`], and `main` maps
//! errors to exit codes (1 for failures, 2 for usage and permission errors;
//! a closed output pipe, as in `schedscope report | head`, is success).

mod args;
mod cmd;
mod heap;
mod progress;

/// The version `--version` prints: the package version and, when built
/// from a git checkout, the commit (`0.1.0 (7e7406a1b)`; see build.rs).
pub const VERSION: &str = env!("SCHEDSCOPE_VERSION");

use clap::Parser;
use std::process::ExitCode;

/// An error that carries its own exit code (e.g. 2 for missing permissions).
#[derive(Debug)]
pub struct ExitError {
    /// Process exit code.
    pub code: u8,
    /// Message printed after "schedscope: ".
    pub message: String,
}

impl std::fmt::Display for ExitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

fn main() -> ExitCode {
    // Code addresses are named from the trace, then the host (live
    // kallsyms, ELF files, live processes): the analyses ask through the
    // symbolizer installed here.
    schedscope_symbolize::install();
    let cli = args::Cli::parse_from(args::hoist_diff_options(std::env::args_os().collect()));
    match cmd::run(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            if let Some(e) = err.downcast_ref::<ExitError>() {
                eprintln!("schedscope: {}", e.message);
                return ExitCode::from(e.code);
            }
            eprintln!("schedscope: {}", message(&err));
            ExitCode::from(1)
        }
    }
}

/// `err` and its causes, `outer: cause: ...`, leaving out a cause whose
/// text the message before it already ends with (errors that print their
/// source in their own message, as the collector's do).
fn message(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
