//! `schedscope demo`: record the bundled ebizzy-like workload with the
//! default events and call chains, then print the full report.

use crate::args::DemoArgs;
use anyhow::Context;
use schedscope_collector::RecordConfig;
use std::process::ExitCode;
use std::time::Duration;

/// Run `schedscope demo`.
pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    if args.seconds == 0 {
        return Err(crate::ExitError {
            code: 2,
            message: "--seconds must be at least 1".into(),
        }
        .into());
    }
    let exe = std::env::current_exe().context("cannot locate the schedscope executable")?;
    let workload = exe.with_file_name("schedscope-ebizzy");
    if !workload.is_file() {
        return Err(crate::ExitError {
            code: 2,
            message: format!(
                "{} not found: build both binaries with `cargo build --release` (the workspace builds schedscope-ebizzy next to schedscope)",
                workload.display()
            ),
        }
        .into());
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .max(2);
    let cfg = RecordConfig {
        output: args.output.clone(),
        events: Vec::new(),
        duration: Some(Duration::from_secs(args.seconds + 30)),
        buffer_bytes: None,
        call_graph: true,
        profile_hz: None,
        cgroups: Vec::new(),
        command: vec![
            workload.display().to_string(),
            "-t".into(),
            threads.to_string(),
            "-S".into(),
            args.seconds.to_string(),
        ],
        cmdline: std::env::args().collect(),
    };
    eprintln!(
        "schedscope demo: recording {} threads of schedscope-ebizzy for {} s into {}",
        threads,
        args.seconds,
        args.output.display()
    );
    let summary = super::record::record_with_output(&cfg)?;
    if let schedscope_collector::StopReason::WriteError(e) = &summary.stop {
        anyhow::bail!("writing {} failed: {e}", summary.output.display());
    }
    let status = std::process::Command::new(&exe)
        .arg("report")
        .arg("--all")
        .arg(&args.output)
        .status()
        .with_context(|| format!("cannot run {} report", exe.display()))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(c as u8),
        None => ExitCode::from(1),
    })
}
