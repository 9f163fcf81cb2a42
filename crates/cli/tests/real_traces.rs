//! The real-trace corpus (issue 13): `info` and `report --all --format json`
//! on every file of the shared `real-traces/` directory (third-party traces
//! with provenance in its README; read from there, never copied here),
//! compared with an independent oracle per file.
//!
//! For text traces the oracle is the small replay below: it splits each line
//! itself (timestamp token, event token, `key=value` fields) without the
//! decoder, counts events per name, and replays the switches and wakeups
//! with the definitions of docs/design.md: per-task scheduling latency as `perf
//! sched latency` (a wakeup of a sleeping task, or a switch-out with
//! prev_state exactly `R`, starts a wait; the switch-in ends it) and per-CPU
//! idle (time with pid 0 current, from a switch to pid 0 to the next switch
//! on that CPU, the last one running to the end of the trace, and a CPU
//! whose first switch leaves pid 0 idle since the trace began). Every number
//! in the JSON is also checked to be non-negative and, for durations, no
//! larger than span x CPUs.
//!
//! trace-cmd's binary trace.dat is checked with the same replay on the text
//! `trace-cmd report -N -t` prints for the file (trace-cmd decodes, the
//! replay counts; `-N` prints through the kernel's own print fmt, so
//! preempted switch-outs keep their `R+`). perf.data (pipe-mode, and
//! unfinished with a header fixed up in a temporary copy) is checked against
//! `perf script` of the same file: events per name, first and last time,
//! tasks, and, without scheduler events, every scheduler section's
//! `missing_events` error and exit 1; the unfinished file must give exactly
//! one warning, saying the recording was not finished and how many bytes
//! were recovered (the header's data offset to the end of the file, where
//! `perf report -D` on the fixed-up copy also ends).
//!
//! Every file of the directory must have a row in [`ROWS`] and every row a
//! file: a missing file fails the test with its name, so the corpus cannot
//! pass silently.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a file must give.
enum Expect {
    /// A text trace: compared with the replay oracle.
    Text {
        /// The numeric prev_state's preemption marker of the kernel that
        /// wrote it (trace-cmd's raw print), when the file prints numbers.
        numeric_marker: Option<u64>,
        /// Whether lines carry a `[CPU]` column (perf 3.13 omitted it).
        cpu_column: bool,
    },
    /// trace-cmd's binary trace.dat: the replay oracle on `trace-cmd
    /// report -N -t`'s text of the same file.
    TraceDat,
    /// perf.data: compared with `perf script` of the same file.
    PerfData {
        /// The header's data size is 0 (the recording never finished): perf
        /// reads it only from a copy whose header is fixed up.
        unfinished: bool,
    },
}

struct Row {
    file: &'static str,
    expect: Expect,
}

const ROWS: &[Row] = &[
    Row {
        file: "wikibook_4.4.1_ftrace.txt",
        expect: Expect::Text {
            numeric_marker: None,
            cpu_column: true,
        },
    },
    Row {
        file: "trappy_surfaceflinger.html",
        expect: Expect::Text {
            numeric_marker: None,
            cpu_column: true,
        },
    },
    Row {
        file: "lisa_trace_txt.tracecmd.txt",
        expect: Expect::Text {
            // values 0..4096, 4096 alone: Linux 4.8 to 4.13 (TASK_STATE_MAX)
            numeric_marker: Some(4096),
            cpu_column: true,
        },
    },
    Row {
        file: "dspeyer_perf_5b867fd.script.txt",
        expect: Expect::Text {
            numeric_marker: None,
            cpu_column: false,
        },
    },
    Row {
        file: "lisa_sched_load.trace.dat",
        expect: Expect::TraceDat,
    },
    Row {
        file: "quipper_piped_ctx_switch_namespaces-4.14.perf.data",
        expect: Expect::PerfData { unfinished: false },
    },
    Row {
        file: "spinner_unterminated.perf.data",
        expect: Expect::PerfData { unfinished: true },
    },
];

fn schedscope(args: &[&str], path: &Path) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

// ------------------------------------------------------------ the oracle

/// One event line as the oracle reads it.
struct Line<'a> {
    ts: u64,
    cpu: Option<u32>,
    name: &'a str,
    body: &'a str,
}

/// `SECS.FRAC` in ns.
fn ts_ns(s: &str) -> Option<u64> {
    let (a, b) = s.split_once('.')?;
    if b.is_empty() || b.len() > 9 || !a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(
        a.parse::<u64>().ok()? * 1_000_000_000
            + b.parse::<u64>().ok()? * 10u64.pow(9 - b.len() as u32),
    )
}

/// An event line: the first whitespace token `SECS.FRAC:` is the time, the
/// next token (ending in `:`) the event; a `[NNN]` token before the time is
/// the CPU.
fn event_line(line: &str) -> Option<Line<'_>> {
    let toks: Vec<(usize, &str)> = line
        .split(' ')
        .scan(0usize, |pos, t| {
            let at = *pos;
            *pos += t.len() + 1;
            Some((at, t))
        })
        .filter(|(_, t)| !t.is_empty())
        .collect();
    let i = toks
        .iter()
        .position(|(_, t)| t.strip_suffix(':').is_some_and(|x| ts_ns(x).is_some()))?;
    if i == 0 {
        return None;
    }
    let ts = ts_ns(toks[i].1.strip_suffix(':')?)?;
    let (at, ev) = *toks.get(i + 1)?;
    let name = ev.strip_suffix(':')?;
    let cpu = toks[..i].iter().find_map(|(_, t)| {
        t.strip_prefix('[')?
            .strip_suffix(']')
            .filter(|d| d.bytes().all(|c| c.is_ascii_digit()))?
            .parse()
            .ok()
    });
    Some(Line {
        ts,
        cpu,
        name,
        body: line[at + ev.len()..].trim(),
    })
}

/// The bare event name (`sched:sched_switch` -> `sched_switch`).
fn bare(name: &str) -> &str {
    name.split_once(':').map_or(name, |(_, b)| b)
}

/// The integer after `key` (` key=` or at the start).
fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let k = format!("{key}=");
    let at = if body.starts_with(&k) {
        0
    } else {
        body.find(&format!(" {k}"))? + 1
    };
    body[at + k.len()..].split_whitespace().next()
}

fn int(body: &str, key: &str) -> i64 {
    field(body, key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("oracle: no integer {key} in `{body}`"))
}

/// What the replay finds.
#[derive(Default)]
struct Oracle {
    events: u64,
    by_name: BTreeMap<String, u64>,
    start: u64,
    end: u64,
    /// tid -> (switches, max delay).
    latency: BTreeMap<i64, (u64, u64)>,
    /// tid -> what started its largest wait (the first of equal ones), as
    /// the JSON's `delay_max_start` names it.
    max_start: BTreeMap<i64, &'static str>,
    /// cpu -> idle ns.
    idle: BTreeMap<u32, u64>,
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Sleeping,
    WaitCpu(u64, &'static str),
    Done,
}

fn replay(text: &str, numeric_marker: Option<u64>) -> Oracle {
    let mut o = Oracle::default();
    let mut lines: Vec<Line<'_>> = text.lines().filter_map(event_line).collect();
    lines.sort_by_key(|l| l.ts); // stable, as the decoder orders them
    for l in &lines {
        o.events += 1;
        *o.by_name.entry(bare(l.name).to_string()).or_insert(0) += 1;
    }
    o.start = lines.first().map_or(0, |l| l.ts);
    o.end = lines.last().map_or(0, |l| l.ts);
    let has_wakeup = lines
        .iter()
        .any(|l| matches!(bare(l.name), "sched_wakeup" | "sched_wakeup_new"));
    // Latency.
    let mut tasks: HashMap<i64, (Phase, u64)> = HashMap::new();
    for l in &lines {
        match bare(l.name) {
            "sched_switch" => {
                let (prev, next) = (int(l.body, "prev_pid"), int(l.body, "next_pid"));
                let state = field(l.body, "prev_state").expect("prev_state");
                let yielded = match numeric_marker {
                    Some(_) => state == "0",
                    None => state == "R",
                };
                if prev != 0 {
                    let w = if yielded {
                        Phase::WaitCpu(l.ts, "runnable_switch_out")
                    } else {
                        Phase::Sleeping
                    };
                    tasks.insert(prev, (w, l.ts));
                    o.latency.entry(prev).or_insert((0, 0));
                }
                if next != 0 {
                    let t = tasks
                        .entry(next)
                        .or_insert((Phase::WaitCpu(l.ts, "first_seen"), l.ts));
                    if let Phase::WaitCpu(w, kind) = t.0 {
                        t.0 = Phase::Done;
                        if l.ts >= w {
                            let e = o.latency.entry(next).or_insert((0, 0));
                            e.0 += 1;
                            if e.0 == 1 || l.ts - w > e.1 {
                                o.max_start.insert(next, kind);
                            }
                            e.1 = e.1.max(l.ts - w);
                        }
                    }
                    o.latency.entry(next).or_insert((0, 0));
                }
            }
            n @ ("sched_wakeup" | "sched_wakeup_new" | "sched_waking") => {
                if n == "sched_waking" && has_wakeup {
                    continue;
                }
                let tid = int(l.body, "pid");
                if tid == 0 {
                    continue;
                }
                let t = tasks.entry(tid).or_insert((Phase::Sleeping, l.ts));
                o.latency.entry(tid).or_insert((0, 0));
                if t.0 == Phase::Sleeping && t.1 <= l.ts {
                    let kind = match n {
                        "sched_wakeup" => "wakeup",
                        "sched_wakeup_new" => "wakeup_new",
                        _ => "waking",
                    };
                    t.0 = Phase::WaitCpu(l.ts, kind);
                }
            }
            _ => {}
        }
    }
    // Per-CPU idle.
    let mut since: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    for l in lines.iter().filter(|l| bare(l.name) == "sched_switch") {
        let Some(cpu) = l.cpu else { continue };
        // A CPU whose first switch leaves pid 0 was idle since the trace began.
        let first_from_idle = int(l.body, "prev_pid") == 0;
        let s = since
            .entry(cpu)
            .or_insert(first_from_idle.then_some(o.start));
        if let Some(t0) = s.take() {
            *o.idle.entry(cpu).or_insert(0) += l.ts - t0;
        }
        if int(l.body, "next_pid") == 0 {
            *s = Some(l.ts);
        }
        o.idle.entry(cpu).or_insert(0);
    }
    for (cpu, s) in since {
        if let Some(t0) = s {
            *o.idle.entry(cpu).or_insert(0) += o.end - t0;
        }
    }
    o
}

// ------------------------------------------------------------ checks

/// Every number in `v` is non-negative, and every `*_ns` duration (other
/// than absolute times) is at most `limit`.
fn check_numbers(v: &Value, key: &str, limit: u64, file: &str, bad: &mut Vec<String>) {
    match v {
        Value::Number(n) => {
            // cgroup quotas print -1 for "unlimited".
            if n.as_f64().is_some_and(|x| x < 0.0) && key != "quota_us" {
                bad.push(format!("{file}: {key} = {n} is negative"));
            }
            let absolute = key.ends_with("_at_ns")
                || key.ends_with("start_ns")
                || key.ends_with("end_ns")
                || key == "ts_ns"
                || key.ends_with("_ts_ns");
            if key.ends_with("_ns") && !absolute && n.as_u64().is_some_and(|x| x > limit) {
                bad.push(format!("{file}: {key} = {n} exceeds span x CPUs ({limit})"));
            }
        }
        Value::Array(a) => a
            .iter()
            .for_each(|x| check_numbers(x, key, limit, file, bad)),
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| check_numbers(x, k, limit, file, bad)),
        _ => {}
    }
}

/// `info --format json` on `path`: the event count, events per name, first
/// and last event time must be the oracle's. Returns the JSON.
fn check_info(path: &Path, file: &str, o: &Oracle) -> Value {
    let (code, out, err) = schedscope(&["info", "--format", "json"], path);
    assert_eq!(code, 0, "{file}: info failed: {err}");
    let info: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        info["events"].as_u64(),
        Some(o.events),
        "{file}: event count"
    );
    let ours: BTreeMap<String, u64> = info["events_by_name"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (bare(k).to_string(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(ours, o.by_name, "{file}: events per name");
    assert_eq!(info["start_ns"].as_u64(), Some(o.start), "{file}: start");
    assert_eq!(info["end_ns"].as_u64(), Some(o.end), "{file}: end");
    info
}

/// Compare `info` and `report --all` on `path` with the replay of `text`
/// (the file itself, or an independent tool's text of it).
fn check_text(path: &Path, file: &str, text: &str, numeric_marker: Option<u64>, cpu_column: bool) {
    let o = replay(text, numeric_marker);
    assert!(o.events > 0, "{file}: the oracle found no event line");

    check_info(path, file, &o);

    // report --all
    let (code, out, err) = schedscope(&["report", "--all", "--format", "json"], path);
    assert_eq!(code, 0, "{file}: report failed: {err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let cpus = r["trace"]["cpus"].as_u64().unwrap();
    let span = o.end - o.start;
    let mut bad = Vec::new();
    check_numbers(&r, "", span * cpus.max(1), file, &mut bad);
    assert!(bad.is_empty(), "{bad:#?}");

    // latency: per task, switches and max delay
    let tasks = r["latency"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{file}: no latency tasks: {}", r["latency"]));
    let mut got: BTreeMap<i64, (u64, u64)> = BTreeMap::new();
    for t in tasks {
        let tid = t["tid"].as_i64().unwrap();
        assert_eq!(
            t["delay_max_start"].as_str(),
            o.max_start.get(&tid).copied(),
            "{file}: tid {tid}: what started the largest wait"
        );
        let prev = got.insert(
            tid,
            (
                t["switches"].as_u64().unwrap(),
                t["delay_max_ns"].as_u64().unwrap(),
            ),
        );
        assert!(prev.is_none(), "{file}: tid {tid} listed twice");
    }
    let want: BTreeMap<i64, (u64, u64)> = o
        .latency
        .iter()
        .filter(|(tid, _)| got.contains_key(tid))
        .map(|(k, v)| (*k, *v))
        .collect();
    assert_eq!(got, want, "{file}: per-task (switches, max delay)");
    let missing: Vec<_> = o
        .latency
        .iter()
        .filter(|(tid, (sw, _))| *sw > 0 && !got.contains_key(tid))
        .collect();
    assert!(
        missing.is_empty(),
        "{file}: tasks with switches not reported: {missing:?}"
    );
    let total: u64 = o.latency.values().map(|v| v.0).sum();
    assert_eq!(
        r["latency"]["total_switches"].as_u64(),
        Some(total),
        "{file}"
    );

    // Without any wakeup event the sections that need one say so: either
    // wakeup event serves, so sched_wakeup is required and sched_waking
    // only improves the result.
    let wakeups = ["sched_wakeup", "sched_wakeup_new", "sched_waking"];
    if !wakeups.iter().any(|w| o.by_name.contains_key(*w)) {
        for section in ["gang", "idle"] {
            let e = &r[section]["error"];
            assert_eq!(
                e["kind"], "missing_events",
                "{file}: {section}: {}",
                r[section]
            );
            assert_eq!(
                e["missing"],
                serde_json::json!(["sched:sched_wakeup"]),
                "{file}: {e}"
            );
            assert_eq!(e["improves"][0], "sched:sched_waking", "{file}: {e}");
        }
        return;
    }

    // idle: per CPU (or, without a CPU column, the section's refusal)
    if cpu_column {
        assert!(!o.idle.is_empty(), "{file}: the oracle saw no CPU switch");
        let per_cpu: BTreeMap<u32, u64> = r["idle"]["cpus"]
            .as_array()
            .unwrap_or_else(|| panic!("{file}: no idle cpus: {}", r["idle"]))
            .iter()
            .map(|c| {
                (
                    c["cpu"].as_u64().unwrap() as u32,
                    c["idle_ns"].as_u64().unwrap(),
                )
            })
            .filter(|(cpu, _)| o.idle.contains_key(cpu))
            .collect();
        assert_eq!(per_cpu, o.idle, "{file}: per-CPU idle");
    } else {
        for section in ["gang", "lhp", "idle", "tlb"] {
            let e = &r[section]["error"];
            assert_eq!(
                e["kind"], "needs_cpu_column",
                "{file}: {section}: {}",
                r[section]
            );
        }
        let warned = r["trace"]["warnings"].as_array().is_some_and(|w| {
            w.iter().any(|w| {
                w["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("have no CPU column"))
            })
        });
        assert!(
            warned,
            "{file}: no warning about the CPU column: {}",
            r["trace"]
        );
    }
}

/// An oracle tool's stdout (the test fails, naming the tool, when it cannot run).
fn tool(file: &str, prog: &str, args: &[&str], path: &Path) -> String {
    let o = Command::new(prog)
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!("{file}: the oracle `{prog}` cannot run ({e}): install it to check this file")
        });
    assert!(
        o.status.success(),
        "{file}: the oracle `{prog} {args:?}` failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn check_trace_dat(path: &Path, file: &str) {
    let text = tool(file, "trace-cmd", &["report", "-N", "-t", "-i"], path);
    check_text(path, file, &text, None, true);
}

/// The events `perf script` prints (samples: `comm tid time: event:`), the
/// distinct tids of those and of the COMM/FORK/EXIT records.
struct PerfOracle {
    script: Oracle,
    tids: std::collections::BTreeSet<i64>,
}

fn perf_oracle(file: &str, path: &Path) -> PerfOracle {
    let text = tool(
        file,
        "perf",
        &["script", "--ns", "-F", "comm,tid,time,event", "-i"],
        path,
    );
    let script = replay(&text, None);
    let tasks = tool(
        file,
        "perf",
        &[
            "script",
            "--ns",
            "--show-task-events",
            "-F",
            "comm,tid,time,event",
            "-i",
        ],
        path,
    );
    let mut tids = std::collections::BTreeSet::new();
    for l in tasks.lines() {
        if let Some(rest) = l.split("PERF_RECORD_").nth(1) {
            // `COMM: name:pid/tid`, `FORK(pid:tid):(ppid:ptid)`, `EXIT(pid:tid):(...)`
            let tid = if rest.starts_with("COMM") {
                rest.rsplit_once('/')
                    .and_then(|(_, t)| t.trim().parse::<i64>().ok())
            } else {
                rest.split_once('(')
                    .and_then(|(_, r)| r.split_once(')'))
                    .and_then(|(pt, _)| pt.split_once(':'))
                    .and_then(|(_, t)| t.parse::<i64>().ok())
            };
            if let Some(t) = tid.filter(|t| *t > 0) {
                tids.insert(t);
            }
        } else if event_line(l).is_some() {
            // `comm tid time: event:`: the tid is the token before the time
            let toks: Vec<&str> = l.split_whitespace().collect();
            let at = toks
                .iter()
                .position(|t| t.strip_suffix(':').is_some_and(|x| ts_ns(x).is_some()));
            if let Some(t) = at
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| toks[i].parse::<i64>().ok())
                .filter(|t| *t > 0)
            {
                tids.insert(t);
            }
        }
    }
    PerfOracle { script, tids }
}

/// A copy of an unfinished perf.data in `dir` with the header perf would
/// have written: data size up to the end of the file, no feature sections.
/// Returns the copy and the header's data offset.
fn fixed_up(file: &str, path: &Path, dir: &Path) -> (PathBuf, u64) {
    let mut b = std::fs::read(path).unwrap();
    assert!(
        b.len() >= 0x68 && &b[..8] == b"PERFILE2",
        "{file}: not a perf.data file header"
    );
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (offset, size) = (word(0x28), word(0x30));
    assert_eq!(
        size, 0,
        "{file}: the header's data size is not 0: not an unfinished recording"
    );
    let len = b.len() as u64;
    b[0x30..0x38].copy_from_slice(&(len - offset).to_le_bytes());
    b[0x48..0x68].fill(0); // feature bits: perf never wrote the sections
    let copy = dir.join(file);
    std::fs::write(&copy, &b).unwrap();
    (copy, offset)
}

fn check_perf_data(path: &Path, file: &str, unfinished: bool) {
    let dir = schedscope_testkit::tmpdir("real-traces");
    let (oracle_file, data_offset) = if unfinished {
        fixed_up(file, path, &dir)
    } else {
        (path.to_path_buf(), 0)
    };
    let po = perf_oracle(file, &oracle_file);
    let o = &po.script;

    // info: events per name, first and last event, threads
    let info = check_info(path, file, o);
    assert_eq!(
        info["tasks"].as_u64(),
        Some(po.tids.len() as u64),
        "{file}: threads (perf: {:?})",
        po.tids
    );

    // warnings: the unfinished file gives one, saying so and how much was read
    // (the text `info` prints them on stderr, the JSON carries them)
    let (code, _, err) = schedscope(&["info"], path);
    assert_eq!(code, 0, "{file}: info failed: {err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    if unfinished {
        let recovered = std::fs::metadata(path).unwrap().len() - data_offset;
        assert_eq!(warnings.len(), 1, "{file}: expected one warning: {err}");
        assert!(
            warnings[0].contains("the recording was not finished")
                && warnings[0].contains(&format!(
                    "recovered {recovered} bytes of records from byte offset {data_offset}"
                )),
            "{file}: {}",
            warnings[0]
        );
        // perf itself, on the fixed-up copy, reads records up to the end of the file
        let dump = tool(file, "perf", &["report", "-D", "-i"], &oracle_file);
        let last_end = dump
            .lines()
            .filter_map(|l| {
                let (at, rest) = l.split_once('@')?;
                let size = rest.split_once("[0x")?.1.split_once(']')?.0;
                Some(
                    u64::from_str_radix(at.strip_prefix("0x")?, 16).ok()?
                        + u64::from_str_radix(size, 16).ok()?,
                )
            })
            .max();
        assert_eq!(
            last_end,
            Some(data_offset + recovered),
            "{file}: perf's records do not end where the file does"
        );
        assert_eq!(
            info["warnings"].as_array().map(Vec::len),
            Some(1),
            "{file}: {}",
            info["warnings"]
        );
    } else {
        assert!(warnings.is_empty(), "{file}: unexpected warnings: {err}");
    }

    // report --all: without scheduler events every scheduler section says
    // which events are missing, and the command exits 1
    let (code, out, err) = schedscope(&["report", "--all", "--format", "json"], path);
    let r: Value = serde_json::from_str(&out).unwrap();
    let mut bad = Vec::new();
    let cpus = r["trace"]["cpus"].as_u64().unwrap_or(0);
    check_numbers(&r, "", (o.end - o.start) * cpus.max(1), file, &mut bad);
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(!err.contains("panicked"), "{file}: {err}");
    assert!(
        !o.by_name.keys().any(|n| n.starts_with("sched_")),
        "{file}: perf script shows scheduler events: this row's checks do not cover them"
    );
    assert_eq!(code, 1, "{file}: report --all: {err}");
    for section in ["latency", "gang", "lhp", "idle"] {
        let e = &r[section]["error"];
        assert_eq!(
            e["kind"], "missing_events",
            "{file}: {section}: {}",
            r[section]
        );
        assert!(
            e["missing"]
                .as_array()
                .is_some_and(|m| m.iter().any(|x| x == "sched:sched_switch")),
            "{file}: {section}: {e}"
        );
        assert!(
            err.contains(&format!("schedscope: {section}: the trace has no ")),
            "{file}: {section}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_real_trace_against_its_oracle() {
    let dir = schedscope_testkit::real_traces_dir();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "README.md")
        .collect();
    on_disk.sort();
    let missing: Vec<&str> = ROWS
        .iter()
        .map(|r| r.file)
        .filter(|f| !on_disk.iter().any(|d| d == f))
        .collect();
    assert!(
        missing.is_empty(),
        "missing from {}: {missing:?} (the corpus test cannot check them)",
        dir.display()
    );
    let unlisted: Vec<&String> = on_disk
        .iter()
        .filter(|d| !ROWS.iter().any(|r| r.file == d.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "{} has files without a row in ROWS: {unlisted:?}",
        dir.display()
    );
    for row in ROWS {
        let path = dir.join(row.file);
        match row.expect {
            Expect::Text {
                numeric_marker,
                cpu_column,
            } => {
                let text = std::fs::read_to_string(&path).unwrap();
                check_text(&path, row.file, &text, numeric_marker, cpu_column)
            }
            Expect::TraceDat => check_trace_dat(&path, row.file),
            Expect::PerfData { unfinished } => check_perf_data(&path, row.file, unfinished),
        }
    }
}

#[test]
fn the_oracle_reads_lines_as_intended() {
    let l = event_line(
        "  <...>-593   (  593) [002] d..3   538.064918: sched_switch: prev_comm=a b prev_pid=1",
    )
    .unwrap();
    assert_eq!(
        (l.ts, l.cpu, l.name),
        (538_064_918_000, Some(2), "sched_switch")
    );
    assert_eq!(field(l.body, "prev_pid"), Some("1"));
    assert_eq!(field(l.body, "prev_comm"), Some("a"));
    let l =
        event_line("swapper     0 194010.024867: sched:sched_switch: prev_state=R ==>").unwrap();
    assert_eq!((l.cpu, bare(l.name)), (None, "sched_switch"));
    assert!(event_line("# tracer: nop").is_none());
    assert!(
        event_line("  bash-946 [003] .... 676.984916: copy_process.part.5+0x14/0x1acc").is_none()
    );
    // a yield starts a wait, a preemption (R+) does not
    let text = "\
 a-5 [000] .... 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R ==> next_comm=b next_pid=6 next_prio=120
 b-6 [000] .... 1.000010: sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=R+ ==> next_comm=a next_pid=5 next_prio=120
 a-5 [000] .... 1.000030: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=b next_pid=6 next_prio=120
";
    let o = replay(text, None);
    assert_eq!(o.latency[&5], (1, 10_000)); // switched in 10 us after its yield
    assert_eq!(o.latency[&6], (1, 0)); // R+ started no wait
    assert_eq!(o.idle[&0], 0);
}

#[test]
fn a_perf_script_dump_of_samples_only_is_named_with_what_to_record() {
    let dir = schedscope_testkit::tmpdir("samples-only");
    let path = dir.join("cycles.script.txt");
    std::fs::write(
        &path,
        "perf 28039 [000] 194010.024771: cycles: \n\tffffffff8104f45a native_write_msr_safe ([kernel.kallsyms])\n\
         perf 28039 [001] 194010.024790: cpu-clock: \n",
    )
    .unwrap();
    for args in [&["info"][..], &["report", "--all"][..]] {
        let (code, _, err) = schedscope(args, &path);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(
            err.contains("a perf script dump of hardware/software samples only (`cycles` events), without scheduler events"),
            "{err}"
        );
        assert!(err.contains("schedscope record -- COMMAND"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
