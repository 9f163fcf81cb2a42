//! `schedscope-sim`: write a simulated trace (ftrace text, perf.data and the
//! ground truth as JSON).
//!
//! Usage: `schedscope-sim --scenario NAME [--seed N] [--ticks N] --out DIR`
//! writes `DIR/NAME-sN.txt`, `DIR/NAME-sN.data` and `DIR/NAME-sN.truth.json`.

use schedscope_sim::{ftrace, perf, simulate, Config, SCENARIOS};
use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> String {
    format!(
        "usage: schedscope-sim --scenario NAME [--seed N] [--ticks N] --out DIR\n  scenarios: {}",
        SCENARIOS.join(", ")
    )
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut scenario, mut seed, mut ticks, mut out) = (None, 1u64, None, None);
    while let Some(a) = args.next() {
        let mut val = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{}", usage()))
        };
        match a.as_str() {
            "--scenario" => scenario = Some(val("--scenario")?),
            "--seed" => {
                let v = val("--seed")?;
                seed = v
                    .parse()
                    .map_err(|_| format!("--seed: `{v}` is not a number"))?;
            }
            "--ticks" => {
                let v = val("--ticks")?;
                ticks = Some(
                    v.parse::<u64>()
                        .map_err(|_| format!("--ticks: `{v}` is not a number"))?,
                );
            }
            "--out" => out = Some(PathBuf::from(val("--out")?)),
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument `{other}`\n{}", usage())),
        }
    }
    let name = scenario.ok_or_else(usage)?;
    let out = out.ok_or_else(usage)?;
    let mut cfg = Config::scenario(&name, seed)
        .ok_or_else(|| format!("--scenario: unknown scenario `{name}`\n{}", usage()))?;
    if let Some(t) = ticks {
        cfg.ticks = t;
    }
    let sim = simulate(&cfg);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let stem = out.join(format!("{name}-s{seed}"));
    let write = |ext: &str, bytes: &[u8]| -> Result<(), String> {
        let p = stem.with_extension(ext);
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("txt", ftrace::to_ftrace_text(&sim).as_bytes())?;
    write(
        "data",
        &perf::to_perf_data(&sim).map_err(|e| format!("perf.data: {e}"))?,
    )?;
    let truth = serde_json::to_string_pretty(&sim.truth).map_err(|e| e.to_string())?;
    write("truth.json", truth.as_bytes())?;
    eprintln!(
        "{}: {} events, {} threads, {} CPUs",
        stem.display(),
        sim.events.len(),
        sim.threads.len(),
        cfg.cpus
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("schedscope-sim: {e}");
            ExitCode::from(2)
        }
    }
}
