//! The command line, as clap-derive structs that mirror the flags.

use clap::{Args, Parser, Subcommand, ValueEnum};
use schedscope_analysis::Sections;
use std::path::PathBuf;

/// Record what the Linux scheduler did and explain it.
#[derive(Debug, Parser)]
#[command(name = "schedscope", version = crate::VERSION, propagate_version = true, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `schedscope diff`'s options that take a value as the next argument.
const DIFF_VALUE_OPTIONS: [&str; 4] = ["--by", "--format", "--gang-of", "--top"];

/// `argv` with `schedscope diff`'s options written after the NEW inputs
/// (`diff b1 b2 -- n1 n2 --idle --format md`, the usage the issue and the
/// docs (docs/diff.md) give) moved before the `--`, where the parser reads options:
/// after `--` every argument is an input. An argument after `--` that
/// starts with `--` is taken as an option (with its value for `--by`,
/// `--format`, `--gang-of`); write an input named like that as
/// `./--name`. Other commands' arguments are returned as they are.
pub fn hoist_diff_options(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let is_diff = argv.get(1).is_some_and(|a| a == "diff");
    let Some(sep) = argv.iter().position(|a| a == "--") else {
        return argv;
    };
    if !is_diff {
        return argv;
    }
    let mut head: Vec<std::ffi::OsString> = argv[..sep].to_vec();
    let mut inputs = Vec::new();
    let mut tail = argv[sep + 1..].iter();
    while let Some(a) = tail.next() {
        let text = a.to_string_lossy();
        if text.starts_with("--") && text.len() > 2 {
            head.push(a.clone());
            if DIFF_VALUE_OPTIONS.contains(&text.as_ref()) {
                head.extend(tail.next().cloned());
            }
        } else {
            inputs.push(a.clone());
        }
    }
    head.push("--".into());
    head.extend(inputs);
    head
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record scheduler, KVM, IPI, TLB and idle tracepoints into a perf.data file.
    Record(RecordArgs),
    /// Analyse a trace (perf.data, trace-cmd trace.dat or ftrace/trace-cmd text) and print a report.
    Report(ReportArgs),
    /// One-screen summary of a trace file.
    Info(InfoArgs),
    /// Build-free demo: record the bundled ebizzy-like workload and report it.
    Demo(DemoArgs),
    /// Interactive terminal timeline of a trace (CPU lanes, markers, analysis tabs).
    Tui(TuiArgs),
    /// Write a trace's tables as Parquet (hive-partitioned for fleets) and/or CSV.
    Export(ExportArgs),
    /// Compare runs: `Parameter | Base | New | % change` tables (positive = better; every section unless some are named).
    Diff(DiffArgs),
    /// Print a shell completion script on standard output (e.g.
    /// `schedscope completions bash > /etc/bash_completion.d/schedscope`).
    Completions(CompletionsArgs),
    /// Print the man page (roff) on standard output, or write every page to a directory.
    Man(ManArgs),
}

/// `schedscope completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `schedscope man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Print this subcommand's page (schedscope-SUBCOMMAND(1)) instead of schedscope(1).
    pub subcommand: Option<String>,
    /// Write schedscope.1 and one schedscope-SUBCOMMAND.1 per subcommand into DIR instead.
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub dir: Option<PathBuf>,
}

/// Output format of reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned tables for people.
    #[default]
    Text,
    /// One JSON object for scripts.
    Json,
}

/// `schedscope record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Output file (an existing one is renamed to FILE.old).
    #[arg(short = 'o', long = "output", default_value = "schedscope.data")]
    pub output: PathBuf,
    /// Tracepoints: `system:event`, comma-separated lists of them, and
    /// globs (`sched:*`, `irq:softirq_*`) expanded against the kernel's
    /// tracefs events. They replace the default set; `+system:event` (or
    /// `+sched:*`) adds to it. Repeatable.
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    pub events: Vec<String>,
    /// Stop recording after this many seconds. A COMMAND still running then
    /// is left to finish (its output and exit status still pass through);
    /// only the recording stops.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Per-CPU ring buffer size (e.g. 4M, 512K, or pages as a plain number).
    #[arg(long = "buffer-size")]
    pub buffer_size: Option<String>,
    /// Record kernel+user call chains on IPI and TLB events.
    #[arg(long = "call-graph")]
    pub call_graph: bool,
    /// Add a cpu-clock sampling profile at this frequency (Hz), with call chains.
    #[arg(long)]
    pub profile: Option<u64>,
    /// cgroup whose CFS bandwidth counters to sample (repeatable; default: all with a quota).
    #[arg(long = "cgroup")]
    pub cgroups: Vec<String>,
    /// Command to run while recording (system-wide).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `schedscope report`.
#[derive(Debug, Args)]
#[command(after_help = "An invalid --gang-of SPEC exits with status 2 before the trace is read.")]
pub struct ReportArgs {
    /// Trace file (perf.data, also pipe mode, trace-cmd trace.dat, or
    /// ftrace/trace-cmd/perf script text); `-` reads standard input.
    #[arg(default_value = "schedscope.data")]
    pub file: PathBuf,
    /// The analyses to run (latency when none is named).
    #[command(flatten)]
    pub sections: SectionArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
    /// Rows per table in text output.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
}

/// The section flags `report` and `diff` share.
#[derive(Debug, Args)]
pub struct SectionArgs {
    /// Scheduling latency and run time per task.
    #[arg(long)]
    pub latency: bool,
    /// Gang co-run analysis.
    #[arg(long)]
    pub gang: bool,
    /// Explicit gang instead of the automatic ones; repeatable. SPEC is
    /// `pid=N` (the threads of process N), `tids=A,B,C` (these threads),
    /// `comm=REGEX` (threads whose comm matches) or `cgroup=PATH` (threads
    /// at or below this cgroup that ran, from the task cgroups that
    /// `schedscope record` stores, e.g. `cgroup=/system.slice/db.service`).
    /// Implies --gang.
    #[arg(long = "gang-of", value_name = "SPEC")]
    pub gang_of: Vec<String>,
    /// Lock-holder preemption analysis.
    #[arg(long)]
    pub lhp: bool,
    /// Idle-under-bandwidth analysis.
    #[arg(long)]
    pub idle: bool,
    /// TLB-shootdown and IPI hotspots.
    #[arg(long)]
    pub tlb: bool,
    /// Every analysis.
    #[arg(long)]
    pub all: bool,
}

impl SectionArgs {
    /// The sections the flags name (`--gang-of` implies `--gang`, `--all`
    /// every one); `None` when no section flag is given, so that each
    /// command applies its own default.
    pub fn chosen(&self) -> Option<Sections> {
        if self.all {
            return Some(Sections::all());
        }
        let s = Sections {
            latency: self.latency,
            gang: self.gang || !self.gang_of.is_empty(),
            lhp: self.lhp,
            idle: self.idle,
            tlb: self.tlb,
        };
        (!s.is_empty()).then_some(s)
    }
}

/// `schedscope info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Trace file; `-` reads standard input.
    #[arg(default_value = "schedscope.data")]
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

/// `schedscope tui`.
#[derive(Debug, Args)]
pub struct TuiArgs {
    /// Trace file.
    #[arg(default_value = "schedscope.data")]
    pub file: PathBuf,
    /// Neither read nor write the lane cache (kept in
    /// $XDG_CACHE_HOME/schedscope/tui, else ~/.cache/schedscope/tui, so that
    /// a second open draws the lanes at once).
    #[arg(long)]
    pub no_cache: bool,
}

/// `schedscope demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long the workload runs.
    #[arg(long, default_value_t = 5)]
    pub seconds: u64,
    /// Where to write the recording.
    #[arg(short = 'o', long = "output", default_value = "schedscope-demo.data")]
    pub output: PathBuf,
}

/// `schedscope export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Trace files (perf.data or ftrace/trace-cmd/perf script text).
    #[arg(default_value = "schedscope.data")]
    pub files: Vec<PathBuf>,
    /// Parquet root: `DIR/<table>/host=<h>/date=YYYY-MM-DD/run=<id>/part-00000.parquet`.
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// CSV root (same layout, `.csv` files).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<PathBuf>,
    /// Write `DIR/<table>.parquet` (one trace only) instead of partitions.
    #[arg(long)]
    pub flat: bool,
    /// Only these tables (comma-separated; see DIR/_schedscope/README.md).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tables: Vec<String>,
    /// Explicit gang (pid=N, tids=A,B,C, comm=REGEX, cgroup=PATH); repeatable.
    #[arg(long = "gang-of", value_name = "SPEC")]
    pub gang_of: Vec<String>,
}

/// How `diff` pairs tasks, gangs and VMs across runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DiffBy {
    /// By name (process comm; kworkers collapsed).
    #[default]
    Comm,
    /// By name and start order within the name.
    Ordinal,
    /// By name and pid (traces of the same boot).
    Pid,
}

/// Output format of `diff`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Aligned tables, one per section.
    #[default]
    Text,
    /// One JSON object (schema in docs/diff.md).
    Json,
    /// One CSV row per table line.
    Csv,
    /// A Markdown table, for mailing lists and pull requests.
    Md,
}

/// `schedscope diff`.
#[derive(Debug, Args)]
#[command(after_help = "An invalid --gang-of SPEC exits with status 2 before any trace is read.")]
pub struct DiffArgs {
    /// Base traces or export roots; without `--`, exactly two inputs: BASE NEW.
    #[arg(required = true)]
    pub base: Vec<PathBuf>,
    /// New traces or export roots (after `--`; options may follow them).
    // (`hoist_diff_options` moves such trailing options before the `--`.)
    #[arg(last = true)]
    pub new: Vec<PathBuf>,
    /// The sections to compare (every one when none is named).
    #[command(flatten)]
    pub sections: SectionArgs,
    /// How tasks, gangs and VMs are paired across runs.
    #[arg(long, value_enum, default_value_t)]
    pub by: DiffBy,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: DiffFormat,
    /// Rows per section in text and Markdown output, largest |% change|
    /// first (0: every row); JSON and CSV always hold every row.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hoisted(args: &[&str]) -> Vec<String> {
        hoist_diff_options(args.iter().map(Into::into).collect())
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn diff_options_after_the_new_inputs_move_before_the_separator() {
        assert_eq!(
            hoisted(&[
                "schedscope",
                "diff",
                "b1",
                "b2",
                "--",
                "n1",
                "--idle",
                "n2",
                "--format",
                "md",
                "--by=pid",
                "--gang-of",
                "comm=x",
            ]),
            [
                "schedscope",
                "diff",
                "b1",
                "b2",
                "--idle",
                "--format",
                "md",
                "--by=pid",
                "--gang-of",
                "comm=x",
                "--",
                "n1",
                "n2",
            ]
        );
        let cli = Cli::parse_from(hoist_diff_options(
            [
                "schedscope",
                "diff",
                "b",
                "--",
                "n",
                "--latency",
                "--format",
                "csv",
            ]
            .iter()
            .map(Into::into)
            .collect(),
        ));
        let Command::Diff(d) = cli.command else {
            panic!("not diff: {cli:?}");
        };
        assert_eq!(d.base, [PathBuf::from("b")]);
        assert_eq!(d.new, [PathBuf::from("n")]);
        assert!(d.sections.latency);
        assert_eq!(d.format, DiffFormat::Csv);
    }

    #[test]
    fn other_commands_and_diff_without_separator_are_untouched() {
        let v = ["schedscope", "record", "-o", "f", "--", "perf", "--all"];
        assert_eq!(hoisted(&v), v);
        let v = ["schedscope", "diff", "--idle", "a", "b"];
        assert_eq!(hoisted(&v), v);
        let v = ["schedscope", "diff", "a", "--", "./--odd", "n"];
        assert_eq!(hoisted(&v), v);
    }
}
