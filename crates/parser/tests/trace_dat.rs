//! The trace.dat decoder against `trace-cmd report` on a real version-6
//! file (LISA's test asset) and on version-7 files trace-cmd itself makes
//! from it (`trace-cmd convert --file-version 7`, zstd-compressed and
//! uncompressed): every event, with its name, CPU, time, pid and fields.

#[path = "trace_dat_oracle/mod.rs"]
mod oracle;

use schedscope_parser::trace_dat;
use schedscope_trace::{Severity, TraceFormat};
use std::path::{Path, PathBuf};
use std::process::Command;

const LISA: &str = "lisa_sched_load.trace.dat";

fn check(path: &Path) -> usize {
    let data = std::fs::read(path).unwrap();
    let t = oracle::load(path);
    assert_eq!(t.format, TraceFormat::TraceDat);
    let meta = trace_dat::meta::parse("x", &data).unwrap();
    assert!(
        t.warnings.is_empty(),
        "{}: unexpected warnings {:?}",
        path.display(),
        t.warnings
    );
    let n = oracle::compare_with_report(path, &t, &meta.formats);
    // counts by name describe the events
    assert_eq!(
        t.events_by_name.values().sum::<u64>(),
        t.events.len() as u64
    );
    n
}

/// `trace-cmd convert` of the LISA file to version 7 with `compression`.
fn convert(compression: &str) -> PathBuf {
    oracle::need_trace_cmd();
    let dir = schedscope_testkit::tmpdir("tracedat");
    let out = dir.join(format!("lisa_v7_{compression}.dat"));
    schedscope_testkit::run(
        Command::new("trace-cmd")
            .args([
                "convert",
                "--file-version",
                "7",
                "--compression",
                compression,
                "-i",
            ])
            .arg(oracle::real_trace(LISA))
            .arg("-o")
            .arg(&out),
    );
    let head = std::fs::read(&out).unwrap();
    assert!(head.starts_with(b"\x17\x08\x44tracing7\0"), "not a v7 file");
    out
}

#[test]
fn v6_lisa_matches_trace_cmd_report() {
    let path = oracle::real_trace(LISA);
    let n = check(&path);
    assert_eq!(n, 3724);
    let t = oracle::load(&path);
    assert_eq!(t.nr_cpus, 6);
    assert_eq!(t.count("sched:sched_switch"), 399);
    assert!(!t.kernel_symbols.syms.is_empty(), "kallsyms were read");
    assert!(t.tasks.len() > 100, "tasks from comms and saved cmdlines");
}

#[test]
fn v7_zstd_conversion_matches_trace_cmd_report() {
    let path = convert("zstd");
    let data = std::fs::read(&path).unwrap();
    assert!(
        data.windows(5).any(|w| w == b"zstd\0"),
        "the file names zstd compression"
    );
    assert_eq!(check(&path), 3724);
    // and decodes to exactly what the version-6 original gives
    let v6 = oracle::load(&oracle::real_trace(LISA));
    let v7 = oracle::load(&path);
    assert_eq!(v6.events.len(), v7.events.len());
    let fields = |t: &schedscope_trace::Trace| -> Vec<Vec<(String, String)>> {
        (0..t.raw_args.len() as u32)
            .map(|r| {
                t.raw_args
                    .get(r)
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect()
            })
            .collect()
    };
    assert!(!v6.raw_args.is_empty());
    assert_eq!(fields(&v6), fields(&v7));
    assert_eq!(v6.events_by_name, v7.events_by_name);
}

#[test]
fn v7_uncompressed_conversion_matches_trace_cmd_report() {
    assert_eq!(check(&convert("none")), 3724);
}

/// Generated files (see `trace_dat_oracle::scenario`): versions 6 and 7,
/// uncompressed and zstd, with a second instance, time extends, an
/// absolute time stamp and a page with lost events. trace-cmd reads them
/// (so the writer is right) and the decoder agrees with it on every event,
/// on the lost count, and says the instances were merged.
#[test]
fn generated_files_match_trace_cmd_report() {
    let dir = schedscope_testkit::tmpdir("tracedat-gen");
    for (version, zstd, inst) in [
        (6, false, false),
        (6, false, true),
        (7, false, true),
        (7, true, false),
        (7, true, true),
    ] {
        let path = dir.join(format!("gen_v{version}_{zstd}_{inst}.dat"));
        std::fs::write(&path, oracle::scenario(version, zstd, inst)).unwrap();
        let data = std::fs::read(&path).unwrap();
        let t = oracle::load(&path);
        let meta = trace_dat::meta::parse("x", &data).unwrap();
        let n = oracle::compare_with_report(&path, &t, &meta.formats);
        assert_eq!(n, if inst { 46 } else { 40 }, "{}", path.display());
        let (_, dropped) = oracle::report(&path);
        assert_eq!(dropped, 7);
        assert_eq!(t.lost, 7, "{}", path.display());
        let lost = t
            .warnings
            .iter()
            .find(|w| w.message.contains("lost 7 events"));
        assert_eq!(
            lost.map(|w| w.severity),
            Some(Severity::DataLoss),
            "{:?}",
            t.warnings
        );
        let merged = t
            .warnings
            .iter()
            .any(|w| w.message.contains("instances \"\", \"inst\""));
        assert_eq!(merged, inst, "{:?}", t.warnings);
        assert_eq!(t.warnings.len(), 1 + inst as usize, "{:?}", t.warnings);
        assert_eq!(t.nr_cpus, 2);
        assert_eq!(t.tasks.comm(schedscope_trace::Tid(101)), "worker");
    }
}

/// `fixtures/tracedat/` holds the writer's output for two scenarios (seeds
/// for the `trace_dat` fuzz target and small files for manual checks):
/// they must stay exactly what the writer makes. Regenerate with
/// `SCHEDSCOPE_WRITE_FIXTURES=1 cargo test -p schedscope-parser --test trace_dat fixtures`.
#[test]
fn fixtures_are_the_writers_output() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tracedat");
    for (name, version, zstd) in [("gen_v6.dat", 6, false), ("gen_v7_zstd.dat", 7, true)] {
        let want = oracle::scenario(version, zstd, true);
        let p = dir.join(name);
        if std::env::var_os("SCHEDSCOPE_WRITE_FIXTURES").is_some() {
            std::fs::write(&p, &want).unwrap();
        }
        let got = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(
            got == want,
            "{} differs from the writer's output: regenerate it (see this test's doc)",
            p.display()
        );
        let t = oracle::load(&p);
        assert_eq!(t.events.len(), 46);
    }
}

/// The DATE and OFFSET options move every timestamp, as trace-cmd applies
/// them: the events still match `trace-cmd report` (versions 6 and 7).
#[test]
fn date_and_offset_options_shift_times_like_trace_cmd() {
    let dir = schedscope_testkit::tmpdir("tracedat-opts");
    let base = schedscope_parser::load_bytes("b.dat", &oracle::scenario(7, false, false)).unwrap();
    for version in [6, 7] {
        let opts = vec![(1u16, b"0x10\0".to_vec()), (7u16, b"12345\0".to_vec())];
        let path = dir.join(format!("opts_v{version}.dat"));
        std::fs::write(&path, oracle::scenario_with(version, false, false, opts)).unwrap();
        let data = std::fs::read(&path).unwrap();
        let t = schedscope_parser::load(&path).unwrap();
        let meta = trace_dat::meta::parse("x", &data).unwrap();
        assert_eq!(oracle::compare_with_report(&path, &t, &meta.formats), 40);
        // DATE 0x10 microseconds plus OFFSET 12345 ns
        assert_eq!(t.events[0].ts.0, base.events[0].ts.0 + 16_000 + 12_345);
    }
}
