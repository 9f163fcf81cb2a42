//! One module per subcommand.

mod completions;
mod demo;
mod diff;
mod export;
mod info;
mod record;
mod report;
mod tui;

use crate::args::{Cli, Command};
use std::process::ExitCode;

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Record(a) => record::run(a),
        Command::Report(a) => report::run(a),
        Command::Info(a) => info::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Tui(a) => tui::run(a),
        Command::Export(a) => export::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Completions(a) => completions::completions(a),
        Command::Man(a) => completions::man(a),
    }
}
