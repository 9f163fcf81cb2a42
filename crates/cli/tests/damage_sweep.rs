//! Damage sweep: hundreds of damaged variants of small recordings, in every
//! input format schedscope reads (perf.data plain, zstd, pipe mode and
//! unfinished; trace-cmd trace.dat v6 and v7 with zstd; tracefs, trace-cmd
//! and perf script text, and systrace HTML), each run through the CLI as a
//! user would (`report --all --format json`, `report --all` text, `info`)
//! in a child process with an address-space limit and a time limit. Every
//! variant must end with exit 0 (with warnings) or a clear error naming the
//! file: never an abort (allocation failure, panic) or a hang.
//!
//! A variant is the file truncated at a random byte, or with 8 random
//! bytes overwritten at a random offset (seeded: the same variants every
//! run). The damaged files of failures are kept in the temp folder and
//! named in the failure message.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address-space limit of a child (KiB for `ulimit -v`): 4 GiB, far above
/// what the small inputs need, far below the 81 GB allocation a damaged
/// CPU id once asked for.
const AS_LIMIT_KIB: u64 = 4 << 20;

/// A child that runs longer than this hangs (undamaged, each input takes
/// well under a second in a debug build).
const TIME_LIMIT: Duration = Duration::from_secs(30);

/// Variants per input.
const VARIANTS: usize = 36;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The inputs: small recordings of each format this repository holds, and
/// two made from them: an unfinished perf.data (the header's data size 0,
/// as when perf is killed) and a systrace HTML page around tracefs text.
/// (stem, extension, bytes).
fn inputs() -> Vec<(String, String, Vec<u8>)> {
    let mut v: Vec<(String, String, Vec<u8>)> = input_files()
        .iter()
        .map(|p| {
            let data = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("bin");
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, ext.to_string(), data)
        })
        .collect();
    // perf killed while recording: the records, no feature sections, data
    // size 0 (cpu-clock samples: without the tracing-data feature section
    // tracepoint samples could not be decoded at all)
    let mut unfinished = v
        .iter()
        .find(|i| i.0 == "callchain_cpuclock")
        .map(|i| i.2.clone())
        .expect("callchain_cpuclock.data");
    assert_eq!(&unfinished[..8], b"PERFILE2");
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let end = word(&unfinished, 0x28) + word(&unfinished, 0x30);
    unfinished.truncate(end as usize);
    unfinished[0x30..0x38].fill(0);
    v.push(("unfinished".into(), "data".into(), unfinished));
    let text = v
        .iter()
        .find(|i| i.0 == "tracefs-sched")
        .map(|i| i.2.clone())
        .expect("tracefs-sched.txt");
    let mut html =
        b"<!DOCTYPE html>\n<html><body>\n<script class=\"trace-data\" type=\"application/text\">\n"
            .to_vec();
    html.extend(text);
    html.extend(b"\n</script>\n</body></html>\n");
    v.push(("systrace".into(), "html".into(), html));
    v
}

/// The files among the inputs.
fn input_files() -> Vec<PathBuf> {
    let r = root();
    let files = [
        "fuzz/seeds/perf_data/sched_switch_wakeup.data",
        "fuzz/seeds/perf_data/zstd.data",
        "fuzz/seeds/perf_data/callchain_cpuclock.data",
        "fuzz/seeds/perf_data/pipe.data",
        "fuzz/seeds/perf_data/pipe_zstd.data",
        "fuzz/seeds/ftrace_text/tracefs-sched.txt",
        "fuzz/seeds/ftrace_text/tracefs-ipi-tgid.txt",
        "fuzz/seeds/ftrace_text/tracecmd-sched.txt",
        "fuzz/seeds/ftrace_text/perf-script.txt",
        "fixtures/tracedat/gen_v6.dat",
        "fixtures/tracedat/gen_v7_zstd.dat",
    ];
    files.iter().map(|f| r.join(f)).collect()
}

/// xorshift64*: the variants are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Variant `i` of `data`: even ones truncated, odd ones with 8 random bytes.
fn variant(data: &[u8], i: usize, rng: &mut Rng) -> (Vec<u8>, String) {
    if i.is_multiple_of(2) {
        let at = 1 + rng.below(data.len() - 1);
        (data[..at].to_vec(), format!("truncated at byte {at}"))
    } else {
        let mut d = data.to_vec();
        let at = rng.below(d.len() - 8);
        let bytes = rng.next().to_le_bytes();
        d[at..at + 8].copy_from_slice(&bytes);
        (d, format!("8 bytes {bytes:02x?} at byte {at}"))
    }
}

/// What one run of the CLI did.
struct Outcome {
    status: Option<std::process::ExitStatus>,
    stderr: String,
    stdout: Vec<u8>,
    took: Duration,
}

/// Run the CLI with `args` under the limits; `None` status: killed after
/// the time limit.
fn run_limited(args: &[&str]) -> Outcome {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let t0 = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {AS_LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(bin)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start schedscope");
    // read both pipes while waiting, so that a chatty child never blocks
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if t0.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = t0.elapsed();
    Outcome {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap_or_default()).into_owned(),
        took,
    }
}

/// Why the outcome of `args` on `file` is not acceptable, if it is not.
fn judge(o: &Outcome, file: &str, json: bool) -> Option<String> {
    let Some(st) = o.status else {
        return Some(format!("still running after {TIME_LIMIT:?}: killed"));
    };
    if o.stderr.contains("panicked") || o.stderr.contains("memory allocation") {
        return Some(format!("aborted: {}", o.stderr.trim()));
    }
    match st.code() {
        Some(0) => {
            if json {
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(&o.stdout) {
                    return Some(format!("exit 0 but the JSON does not parse: {e}"));
                }
            }
            None
        }
        // a clear error: the decoder's names the file; the analyses' say
        // which events are missing (on stdout under the report's first
        // line, which names the file, in text mode)
        Some(1) | Some(2)
            if o.stderr.contains(file)
                || String::from_utf8_lossy(&o.stdout).contains(file)
                || o.stderr.lines().any(|l| {
                    l.starts_with("schedscope: ") && !l.starts_with("schedscope: warning:")
                }) =>
        {
            None
        }
        Some(c) => Some(format!(
            "exit {c} without an error message: {}",
            o.stderr.trim()
        )),
        None => Some(format!("killed by a signal ({st}): {}", o.stderr.trim())),
    }
}

#[test]
fn damaged_inputs_end_quickly_with_a_result_or_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("schedscope-damage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t0 = Instant::now();
    let mut jobs = Vec::new();
    let mut rng = Rng(0x5eed_da3a_9e00_0001);
    for (stem, ext, data) in inputs() {
        // the undamaged input must be read: the variants then damage a
        // file of this format, not a file the tool rejects anyway
        let whole = dir.join(format!("{stem}.{ext}"));
        std::fs::write(&whole, &data).unwrap();
        let o = run_limited(&["info", &whole.to_string_lossy()]);
        assert_eq!(
            o.status.and_then(|s| s.code()),
            Some(0),
            "{stem}.{ext} undamaged: {}",
            o.stderr
        );
        let _ = std::fs::remove_file(&whole);
        for i in 0..VARIANTS {
            let (d, how) = variant(&data, i, &mut rng);
            let path = dir.join(format!("{stem}-{i}.{ext}"));
            std::fs::write(&path, d).unwrap();
            jobs.push((path, how, i));
        }
    }
    let n = jobs.len();
    // two workers: the sweep's time, not the machine, is the limit
    let jobs = std::sync::Mutex::new(jobs);
    let failures = std::sync::Mutex::new(Vec::new());
    let slowest = std::sync::Mutex::new((Duration::ZERO, String::new()));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some((path, how, i)) = jobs.lock().unwrap().pop() else {
                    break;
                };
                let file = path.to_string_lossy().into_owned();
                // each output path in turn: JSON, text, info
                let (args, json): (Vec<&str>, bool) = match i % 3 {
                    0 => (vec!["report", "--all", "--format", "json", &file], true),
                    1 => (vec!["report", "--all", &file], false),
                    _ => (vec!["info", &file], false),
                };
                let o = run_limited(&args);
                {
                    let mut sl = slowest.lock().unwrap();
                    if o.took > sl.0 {
                        *sl = (o.took, format!("{} ({how})", args.join(" ")));
                    }
                }
                match judge(&o, &file, json) {
                    Some(why) => failures
                        .lock()
                        .unwrap()
                        .push(format!("{} ({how}): {why}", args.join(" "))),
                    None => {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let (slow, what) = slowest.into_inner().unwrap();
    eprintln!(
        "damage sweep: {n} variants in {:.1} s; slowest {:.2} s: {what}",
        t0.elapsed().as_secs_f64(),
        slow.as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {n} damaged variants failed (files kept in {}):\n{}",
        failures.len(),
        dir.display(),
        failures.join("\n")
    );
    let _ = std::fs::remove_dir(&dir);
}

/// The `report` fuzz target's findings (`fuzz/regressions/report/`), each
/// through the CLI under the same limits: JSON, text and info.
/// `oom-65969bb6...`: perf script text whose damaged timestamp made the
/// trace span 636 million seconds; idle's per-second buckets took 15 GB
/// and 17 s.
#[test]
fn report_fuzz_findings_end_quickly() {
    let dir = root().join("fuzz/regressions/report");
    let mut n = 0;
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        let file = path.to_string_lossy().into_owned();
        for (args, json) in [
            (vec!["report", "--all", "--format", "json", &file], true),
            (vec!["report", "--all", &file], false),
            (vec!["info", &file], false),
        ] {
            let o = run_limited(&args);
            if let Some(why) = judge(&o, &file, json) {
                panic!("{}: {why}", args.join(" "));
            }
            assert!(
                o.took < Duration::from_secs(10),
                "{}: took {:?}",
                args.join(" "),
                o.took
            );
        }
        n += 1;
    }
    assert!(n > 0, "no findings in {}", dir.display());
}
