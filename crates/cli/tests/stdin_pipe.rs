//! `-` reads the trace from standard input, in `report` and `info`: the same
//! output as the file gives (the trace named `<stdin>`), and for real,
//! `perf record -o - -a -e 'sched:*' -- CMD | schedscope report -` (needs
//! root, perf and tracefs; skipped with a message otherwise).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_schedscope")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run the CLI with `args`, `input` on its standard input: (exit code,
/// stdout, stderr).
fn run_stdin(args: &[&str], input: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let data = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn run_file(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(bin())
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// perf.data (file and pipe mode, plain and zstd) and text traces give the
/// same `report --all --format json` and `info` from `-` as from the file.
#[test]
fn dash_reads_standard_input_like_the_file() {
    for f in [
        "fixtures/perf/sched_small.data",
        "fixtures/perf/sched_small_zstd.data",
        "fuzz/seeds/perf_data/pipe.data",
        "fuzz/seeds/perf_data/pipe_zstd.data",
        "fixtures/ftrace/tracefs-sched.txt",
    ] {
        let data = std::fs::read(root().join(f)).unwrap();
        for args in [&["report", "--all", "--format", "json"][..], &["info"][..]] {
            let mut a = args.to_vec();
            a.push("-");
            let (code_in, out_in, err_in) = run_stdin(&a, &data);
            let mut a = args.to_vec();
            a.push(f);
            let (code_f, out_f, err_f) = run_file(&a);
            assert_eq!(code_in, code_f, "{f} {args:?}: {err_in}");
            assert_eq!(code_f, 0, "{f} {args:?}: {err_f}");
            assert!(!out_f.is_empty());
            assert_eq!(out_in, out_f.replace(f, "<stdin>"), "{f} {args:?}");
            assert_eq!(err_in, err_f.replace(f, "<stdin>"), "{f} {args:?}");
        }
    }
}

/// An empty standard input is a clear error naming `<stdin>`.
#[test]
fn empty_standard_input_is_a_clear_error() {
    let (code, out, err) = run_stdin(&["report", "-"], b"");
    assert_ne!(code, 0);
    assert!(out.is_empty());
    assert!(err.contains("<stdin>"), "{err}");
}

/// The command of the issue, for real.
#[test]
fn perf_record_piped_into_report() {
    if schedscope_testkit::id_u_is_root() != Some(true)
        || !schedscope_testkit::perf_works()
        || !Path::new("/sys/kernel/tracing/events/sched").exists()
    {
        eprintln!("skipping: needs root, a working perf and tracefs");
        return;
    }
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "perf record -q -o - -a -e 'sched:*' -- perf bench sched messaging -g 1 -l 20 2>/dev/null | '{}' report --all -",
            bin()
        ))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}\n{out}");
    assert!(out.starts_with("<stdin>: perf.data"), "{out}");
    assert!(out.contains("== Scheduling latency =="), "{out}");
    // the latency section found the benchmark's tasks
    assert!(out.contains("sched-messaging"), "{out}");
}
