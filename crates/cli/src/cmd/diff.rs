//! `schedscope diff`: compare two sets of runs (traces of any input format,
//! or Parquet export roots) and print `Parameter | Base | New | % change`.

use crate::args::{DiffArgs, DiffBy, DiffFormat};
use crate::cmd::report::{load_options, load_with, streamed, streams, Progress};
use crate::ExitError;
use schedscope_analysis::gang::GangSpec;
use schedscope_analysis::keys::By;
use schedscope_analysis::metrics::{self, Run};
use schedscope_analysis::{Options, Report, Sections};
use schedscope_render::diff::{self as render, DiffView};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The validated configuration of one `diff` run.
struct Config {
    base: Vec<PathBuf>,
    new: Vec<PathBuf>,
    sections: Sections,
    by: By,
    opts: Options,
}

/// An invalid `--gang-of` SPEC is a usage error (exit 2), reported before
/// any trace is loaded (as `report` does).
pub(crate) fn check_gang_specs(specs: &[String]) -> Result<(), ExitError> {
    for spec in specs {
        GangSpec::parse(spec).map_err(|e| ExitError {
            code: 2,
            message: e.to_string(),
        })?;
    }
    Ok(())
}

fn config(a: DiffArgs) -> anyhow::Result<Config> {
    check_gang_specs(&a.sections.gang_of)?;
    let (base, new) = if a.new.is_empty() {
        if a.base.len() != 2 {
            anyhow::bail!(
                "diff: give BASE NEW, or BASE... -- NEW... for several traces per side ({} inputs without --)",
                a.base.len()
            );
        }
        (vec![a.base[0].clone()], vec![a.base[1].clone()])
    } else {
        (a.base, a.new)
    };
    let sections = a.sections.chosen().unwrap_or(Sections::all());
    let by = match a.by {
        DiffBy::Comm => By::Comm,
        DiffBy::Ordinal => By::Ordinal,
        DiffBy::Pid => By::Pid,
    };
    Ok(Config {
        base,
        new,
        sections,
        by,
        opts: Options {
            gang_specs: a.sections.gang_of,
            top: 0,
            timer: crate::cmd::report::timer(),
        },
    })
}

fn names(s: &Sections) -> Vec<&'static str> {
    [
        (s.latency, "latency"),
        (s.gang, "gang"),
        (s.lhp, "lhp"),
        (s.idle, "idle"),
        (s.tlb, "tlb"),
    ]
    .into_iter()
    .filter_map(|(on, n)| on.then_some(n))
    .collect()
}

/// The runs of one input: a trace file, or every run of an export root.
fn runs(path: &Path, cfg: &Config, progress: &Progress) -> anyhow::Result<Vec<Run>> {
    if path.is_dir() {
        if cfg.by != By::Comm {
            anyhow::bail!(
                "{}: an export root carries comm keys only; use --by comm with Parquet inputs",
                path.display()
            );
        }
        return Ok(schedscope_export::read::summary_metrics(path)?);
    }
    let load = load_options(&cfg.sections);
    // (big perf.data files stream, as `report`'s do: the events are not held)
    let streamed = if streams(&cfg.sections, path) {
        streamed(path, progress, &load, cfg.sections, &cfg.opts)?
    } else {
        None
    };
    let (trace, report) = match streamed {
        Some((trace, report, _timeline)) => (trace, report),
        None => {
            let trace = load_with(path, progress, &load)?;
            let report = Report::compute(&trace, cfg.sections, &cfg.opts);
            (trace, report)
        }
    };
    for e in report.errors() {
        eprintln!("schedscope: {}: {e}", path.display());
    }
    Ok(vec![Run {
        label: path.display().to_string(),
        metrics: metrics::of_report(&trace, &report, cfg.by),
    }])
}

/// Run `schedscope diff`.
pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let format = args.format;
    let view = DiffView { top: args.top };
    let cfg = config(args)?;
    let progress = Progress::new();
    let side = |paths: &[PathBuf]| -> anyhow::Result<Vec<Run>> {
        let mut v = Vec::new();
        for p in paths {
            v.extend(runs(p, &cfg, &progress)?);
        }
        Ok(v)
    };
    let base = side(&cfg.base)?;
    let new = side(&cfg.new)?;
    progress.done();
    let d = schedscope_diff::compare(&base, &new, &names(&cfg.sections));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match format {
        DiffFormat::Text => render::text(&d, &view, &mut out)?,
        DiffFormat::Md => render::markdown(&d, &view, &mut out)?,
        DiffFormat::Csv => render::csv(&d, &mut out)?,
        DiffFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &d)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
