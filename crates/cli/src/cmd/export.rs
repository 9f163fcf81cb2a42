//! `schedscope export`: write each trace's tables as Parquet and/or CSV
//! (see the `schedscope_export` crate for the layout and the tables).

use crate::args::ExportArgs;
use crate::cmd::report::{load_with, print_warnings, Progress};
use crate::progress::phase_line;
use schedscope_export::{ExportOptions, Exported, MemoryHook, PhaseHook};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// The validated configuration of one `export` run.
fn config(a: &ExportArgs) -> anyhow::Result<ExportOptions> {
    crate::cmd::diff::check_gang_specs(&a.gang_of)?;
    if a.parquet.is_none() && a.csv.is_none() {
        anyhow::bail!("export: give --parquet DIR and/or --csv DIR");
    }
    if a.flat && a.files.len() > 1 {
        anyhow::bail!(
            "export: --flat writes one trace ({} given); drop --flat to export several traces as partitions",
            a.files.len()
        );
    }
    let tables = (!a.tables.is_empty()).then(|| a.tables.clone());
    if let Some(t) = &tables {
        schedscope_export::check_tables(t)?;
    }
    Ok(ExportOptions {
        parquet: a.parquet.clone(),
        csv: a.csv.clone(),
        flat: a.flat,
        tables,
        analysis: schedscope_analysis::Options {
            gang_specs: a.gang_of.clone(),
            top: 0,
            timer: crate::cmd::report::timer(),
        },
        on_phase: None,
        give_back_memory: Some(MemoryHook(Arc::new(crate::heap::give_back_free_memory))),
    })
}

fn summary(file: &std::path::Path, e: &Exported) {
    let rows: u64 = e.rows.iter().map(|r| r.1).sum();
    eprintln!(
        "schedscope: exported {} as host={} date={} run={}: {} tables, {} rows",
        file.display(),
        e.host,
        e.date,
        e.run,
        e.rows.len(),
        rows
    );
}

/// Run `schedscope export`.
pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let mut opts = config(&args)?;
    let progress = Progress::new();
    // the phase export is in, for the progress line
    let phase = Arc::new(Mutex::new(String::new()));
    let told = phase.clone();
    opts.on_phase = Some(PhaseHook(Arc::new(move |p: &str| {
        if let Ok(mut now) = told.lock() {
            p.clone_into(&mut now);
        }
    })));
    let load = schedscope_parser::LoadOptions {
        // No spare decoder memory for the timeline: keeping it holds about
        // 95 MiB more resident from the load on (the rows are written
        // before the timeline is built) and raised the peak by ~60 MiB,
        // for no measurable time.
        spare: false,
        // (the raw_arg table writes untyped events' fields)
        raw_fields: true,
        ..Default::default()
    };
    for file in &args.files {
        let mut trace = load_with(file, &progress, &load)?;
        print_warnings(&trace);
        let shown = file.display().to_string();
        if let Ok(mut now) = phase.lock() {
            now.clear();
        }
        let e = progress
            .while_running(
                |elapsed| {
                    let now = phase.lock().map(|p| p.clone()).unwrap_or_default();
                    phase_line("exporting", &shown, &now, elapsed)
                },
                || schedscope_export::export(&mut trace, file, &opts),
            )
            .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        summary(file, &e);
    }
    Ok(ExitCode::SUCCESS)
}
