//! Shared by the trace.dat tests: locating the third-party traces, running
//! `trace-cmd report` (the oracle) and comparing every event with it.

#![allow(dead_code)]

use schedscope_parser::tracefs_format::EventFormat;
use schedscope_trace::{EventData, Trace};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Load a trace keeping untyped events' fields (the oracle compares them).
pub fn load(path: &Path) -> Trace {
    let opts = schedscope_parser::LoadOptions {
        raw_fields: true,
        ..Default::default()
    };
    schedscope_parser::load_with(path, &opts).unwrap()
}

/// `NAME` in the shared real-trace corpus
/// ([`schedscope_testkit::real_traces_dir`]); panics saying what is missing.
pub fn real_trace(name: &str) -> PathBuf {
    schedscope_testkit::real_trace(name)
}

/// Panics, saying how to install it, when trace-cmd cannot be run.
pub fn need_trace_cmd() {
    let ok = Command::new("trace-cmd")
        .arg("--help")
        .output()
        .map(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
        .unwrap_or(false);
    assert!(
        ok,
        "trace-cmd is not installed: this test compares with `trace-cmd report` \
         (scripts/setup.sh installs it: apt-get install trace-cmd)"
    );
}

/// One event line of `trace-cmd report -R -t`.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub pid: i64,
    pub cpu: u32,
    pub ts: u64,
    pub name: String,
    pub fields: String,
}

fn parse_line(l: &str) -> Option<Line> {
    let (head, rest) = l.split_once("] ")?;
    let (who, cpu) = head.rsplit_once('[')?;
    let cpu: u32 = cpu.parse().ok()?;
    let (_, pid) = who.trim_end().rsplit_once('-')?;
    let pid: i64 = pid.parse().ok()?;
    let (ts, rest) = rest.trim_start().split_once(": ")?;
    let (s, ns) = ts.split_once('.')?;
    if ns.len() != 9 {
        return None;
    }
    let ts = s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?;
    let (name, fields) = rest.split_once(':')?;
    Some(Line {
        pid,
        cpu,
        ts,
        name: name.trim().to_string(),
        fields: fields.trim().to_string(),
    })
}

/// The events `trace-cmd report -R -t -i FILE` prints (raw fields,
/// nanosecond times), and the sum of its `CPU:N [M EVENTS DROPPED]` lines;
/// a line that is neither continues the previous event's fields (a printed
/// string with a newline).
pub fn report(path: &Path) -> (Vec<Line>, u64) {
    need_trace_cmd();
    let out = Command::new("trace-cmd")
        .args(["report", "-R", "-t", "-i"])
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("trace-cmd report: {e}"));
    assert!(
        out.status.success(),
        "trace-cmd report -i {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<Line> = Vec::new();
    let mut dropped = 0u64;
    for l in text.lines() {
        if l.starts_with("cpus=") || l.trim().is_empty() {
            continue;
        }
        if let Some(n) = l
            .trim()
            .strip_prefix("CPU:")
            .and_then(|r| r.split_once(" ["))
            .and_then(|(_, r)| r.strip_suffix(" EVENTS DROPPED]"))
        {
            dropped += n.parse::<u64>().unwrap();
            continue;
        }
        match parse_line(l) {
            Some(x) => lines.push(x),
            None => match lines.last_mut() {
                Some(prev) => {
                    prev.fields.push('\n');
                    prev.fields.push_str(l);
                }
                None => panic!("unexpected first line of trace-cmd report: {l:?}"),
            },
        }
    }
    (lines, dropped)
}

/// `text` ("a=1 b=x y c=3") split into its fields, knowing their names in
/// order (values may hold spaces).
fn split_fields(text: &str, names: &[&str]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = text;
    for (i, n) in names.iter().enumerate() {
        let key = format!("{n}=");
        let Some(start) = rest.strip_prefix(&key) else {
            break;
        };
        let end = match names.get(i + 1) {
            Some(next) => start.find(&format!(" {next}=")).unwrap_or(start.len()),
            None => start.len(),
        };
        out.insert(n.to_string(), start[..end].to_string());
        rest = start[end..].trim_start();
    }
    out
}

/// The fields of `e` as `trace-cmd report -R` prints them, from the typed
/// payload (or the kept raw fields of an untyped event).
fn fields_of(t: &Trace, e: &schedscope_trace::Event, marker: u64) -> Vec<(String, String)> {
    let s = |id| t.strings.get(id).to_string();
    let kv = |v: &[(&str, String)]| -> Vec<(String, String)> {
        v.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    };
    match e.data {
        EventData::Switch {
            prev_tid,
            prev_prio,
            prev_state,
            prev_comm,
            next_tid,
            next_prio,
            next_comm,
        } => {
            // prev_state compares as letters: trace-cmd -R prints the
            // kernel's number, whose bits changed across versions; the
            // decoder normalises them (PrevState's table)
            let _ = marker;
            kv(&[
                ("prev_comm", s(prev_comm)),
                ("prev_pid", prev_tid.0.to_string()),
                ("prev_prio", prev_prio.to_string()),
                ("prev_state", prev_state.to_text()),
                ("next_comm", s(next_comm)),
                ("next_pid", next_tid.0.to_string()),
                ("next_prio", next_prio.to_string()),
            ])
        }
        EventData::Wakeup {
            tid,
            comm,
            prio,
            target_cpu,
            ..
        } => kv(&[
            ("comm", s(comm)),
            ("pid", tid.0.to_string()),
            ("prio", prio.to_string()),
            ("target_cpu", target_cpu.0.to_string()),
        ]),
        EventData::Migrate {
            tid,
            comm,
            orig_cpu,
            dest_cpu,
        } => kv(&[
            ("comm", s(comm)),
            ("pid", tid.0.to_string()),
            ("orig_cpu", orig_cpu.0.to_string()),
            ("dest_cpu", dest_cpu.0.to_string()),
        ]),
        EventData::CpuIdle { state, cpu_id } => kv(&[
            ("state", state.to_string()),
            ("cpu_id", cpu_id.0.to_string()),
        ]),
        EventData::Fork {
            parent_tid,
            child_tid,
            child_comm,
        } => kv(&[
            ("parent_pid", parent_tid.0.to_string()),
            ("child_comm", s(child_comm)),
            ("child_pid", child_tid.0.to_string()),
        ]),
        EventData::Exit { tid, comm } => kv(&[("comm", s(comm)), ("pid", tid.0.to_string())]),
        EventData::Other(Some(i)) => {
            let mut v: Vec<(String, String)> = t
                .raw_args
                .get(i)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            if t.event_name(e.name) == "ftrace:print" {
                for (k, val) in v.iter_mut() {
                    if k == "ip" {
                        let addr: u64 = val.parse().unwrap();
                        // (trace-cmd prints the symbol without its offset)
                        let (name, _off) = t.kernel_symbols.lookup(addr).unwrap();
                        *val = name.to_string();
                    }
                }
            }
            v
        }
        ref d => panic!("no oracle comparison written for {d:?}"),
    }
}

/// Compare every event of `t` (decoded from `path`) with `trace-cmd
/// report`: the same events in the same order (by time, then CPU), each
/// with the same name, CPU, time, pid and fields. Returns the number of
/// events compared.
pub fn compare_with_report(path: &Path, t: &Trace, formats: &[EventFormat]) -> usize {
    let (mut want, _) = report(path);
    assert!(!want.is_empty(), "trace-cmd report printed no events");
    want.sort_by_key(|l| (l.ts, l.cpu));
    let mut got: Vec<&schedscope_trace::Event> = t.events.iter().collect();
    got.sort_by_key(|e| (e.ts.0, e.cpu.0));
    let fmt_by_name: HashMap<String, &EventFormat> =
        formats.iter().map(|f| (f.full_name(), f)).collect();
    let n = want.len().min(got.len());
    for (i, (w, e)) in want.iter().zip(&got).enumerate() {
        let full = t.event_name(e.name);
        let short = full.rsplit(':').next().unwrap_or(full);
        let ctx = format!("event {i} of {}: {w:?}", path.display());
        assert_eq!(short, w.name, "name, {ctx}");
        assert_eq!(e.cpu.0, w.cpu, "cpu, {ctx}");
        assert_eq!(e.ts.0, w.ts, "ts, {ctx}");
        assert_eq!(e.tid.0 as i64, w.pid, "pid, {ctx}");
        let f = fmt_by_name[full];
        let names: Vec<&str> = f
            .fields
            .iter()
            .map(|x| x.name.as_str())
            .filter(|n| !n.starts_with("common_"))
            .collect();
        let theirs = split_fields(&w.fields, &names);
        let marker = f.preempt_marker().unwrap_or(0x100);
        let ours = fields_of(t, e, marker);
        assert!(!ours.is_empty(), "no fields to compare, {ctx}");
        for (k, v) in ours {
            let tv = theirs
                .get(&k)
                .unwrap_or_else(|| panic!("field {k} missing in trace-cmd's line, {ctx}"));
            if k == "prev_state" && full == "sched:sched_switch" {
                let layout = if marker == 0x100 {
                    schedscope_trace::StateLayout::Report
                } else {
                    schedscope_trace::StateLayout::Legacy { marker }
                };
                let n: u64 = tv
                    .parse()
                    .expect("trace-cmd -R prints prev_state as a number");
                let theirs = schedscope_trace::PrevState::from_raw(n, layout).to_text();
                assert_eq!(v, theirs, "field {k} ({n}), {ctx}");
                continue;
            }
            // (numbers compare as numbers: trace-cmd prints target_cpu=001)
            match (v.parse::<i64>(), tv.parse::<i64>()) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "field {k}, {ctx}"),
                _ => assert_eq!(v.trim_end(), tv.trim_end(), "field {k}, {ctx}"),
            }
        }
    }
    assert_eq!(got.len(), want.len(), "event count of {}", path.display());
    n
}

pub mod writer;

/// A small generated trace: 2 CPUs, sched_switch / sched_wakeup /
/// sched_migrate_task with this kernel's formats, pages of at most 5
/// events, gaps that need time extends, one absolute time stamp, a page
/// with 7 lost events on CPU 1, and (when `instance`) a second buffer
/// named "inst" with wakeups on CPU 0.
pub fn scenario(version: u32, zstd: bool, instance: bool) -> Vec<u8> {
    scenario_with(version, zstd, instance, Vec::new())
}

/// [`scenario`] with extra options (id, data) in the file.
pub fn scenario_with(
    version: u32,
    zstd: bool,
    instance: bool,
    options: Vec<(u16, Vec<u8>)>,
) -> Vec<u8> {
    use writer::{format_text, payload, Ev, Instance, Spec, Val};
    let sw = format_text("sched_switch");
    let wk = format_text("sched_wakeup");
    let mg = format_text("sched_migrate_task");
    let s = |x: &str| Val::Str(x.to_string());
    let i = Val::Int;
    let mut top = Instance::default();
    let mut ts = 5_000_000_000u64;
    for n in 0..40u64 {
        let cpu = (n % 2) as u32;
        // every 7th step is a gap of 0.3 s (> 2^27 ns: a time extend)
        ts += if n % 7 == 6 {
            300_000_000
        } else {
            12_345 + n * 1000
        };
        let pid = 100 + (n % 3) as i32;
        let p = match n % 4 {
            0 => payload(
                &wk,
                0,
                &[
                    ("comm", s("worker")),
                    ("pid", i(pid as i64)),
                    ("prio", i(120)),
                    ("target_cpu", i(cpu as i64)),
                ],
            ),
            3 => payload(
                &mg,
                pid,
                &[
                    ("comm", s("worker")),
                    ("pid", i(pid as i64)),
                    ("prio", i(120)),
                    ("orig_cpu", i(cpu as i64)),
                    ("dest_cpu", i(1 - cpu as i64)),
                ],
            ),
            _ => payload(
                &sw,
                pid,
                &[
                    ("prev_comm", s("worker")),
                    ("prev_pid", i(pid as i64)),
                    ("prev_prio", i(120)),
                    ("prev_state", i(if n % 3 == 0 { 1 } else { 0x100 })),
                    ("next_comm", s("swapper/1")),
                    ("next_pid", i(0)),
                    ("next_prio", i(120)),
                ],
            ),
        };
        top.events.push(Ev {
            cpu,
            ts,
            absolute: n == 21,
            payload: p,
        });
    }
    top.lost.push((1, 1, 7));
    let mut instances = vec![top];
    if instance {
        let mut inst = Instance {
            name: "inst".into(),
            ..Default::default()
        };
        for n in 0..6u64 {
            inst.events.push(Ev {
                cpu: 0,
                ts: 5_000_100_000 + n * 777,
                absolute: false,
                payload: payload(
                    &wk,
                    0,
                    &[
                        ("comm", s("inst-task")),
                        ("pid", i(500)),
                        ("prio", i(100)),
                        ("target_cpu", i(0)),
                    ],
                ),
            });
        }
        instances.push(inst);
    }
    writer::write(&Spec {
        version,
        zstd,
        page_size: 4096,
        cpus: 2,
        instances,
        cmdlines: "100 worker\n101 worker\n102 worker\n500 inst-task\n".into(),
        per_page: 5,
        options,
    })
}
