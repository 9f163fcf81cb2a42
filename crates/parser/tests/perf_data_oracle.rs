//! Oracle tests: traces recorded here with `perf record` must decode to the
//! same events `perf script` prints (count per event name, and every field
//! of every sched_switch, in order). Needs root, perf and tracefs; skips with
//! a message otherwise.

use schedscope_trace::{EventData, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const EVENTS: &str = "sched:sched_switch,sched:sched_wakeup,sched:sched_waking,sched:sched_migrate_task,ipi:ipi_send_cpumask,tlb:tlb_flush";

fn skip_reason() -> Option<String> {
    if !schedscope_testkit::id_u_is_root()? {
        return Some("not root".into());
    }
    if !schedscope_testkit::perf_works() {
        return Some("perf is not installed".into());
    }
    if !Path::new("/sys/kernel/tracing/events/sched").exists() {
        return Some("tracefs is not mounted at /sys/kernel/tracing".into());
    }
    None
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("schedscope-{}-{}", std::process::id(), name))
}

fn record(extra: &[&str], name: &str) -> PathBuf {
    let out = tmp(name);
    let st = Command::new("perf")
        .args(["record", "-q", "-e", EVENTS, "-a"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .args([
            "--",
            "perf",
            "bench",
            "sched",
            "messaging",
            "-g",
            "2",
            "-l",
            "50",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run perf record");
    assert!(st.success(), "perf record failed: {st}");
    out
}

fn perf_script(path: &Path) -> String {
    let o = Command::new("perf")
        .args(["script", "--ns", "-F", "time,cpu,event,trace", "-i"])
        .arg(path)
        .output()
        .expect("run perf script");
    assert!(
        o.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One perf script line: (cpu, "sec.nsec", event name, fields text).
fn split_line(l: &str) -> Option<(u32, String, String, String)> {
    let l = l.trim_start();
    let rest = l.strip_prefix('[')?;
    let (cpu, rest) = rest.split_once(']')?;
    let (time, rest) = rest.trim_start().split_once(": ")?;
    let rest = rest.trim_start();
    let (event, fields) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    Some((
        cpu.parse().ok()?,
        time.trim().to_string(),
        event.to_string(),
        fields.to_string(),
    ))
}

fn between<'a>(s: &'a str, a: &str, b: &str) -> &'a str {
    let start = s.find(a).map(|i| i + a.len()).unwrap_or(0);
    let end = s[start..].find(b).map(|i| start + i).unwrap_or(s.len());
    &s[start..end]
}

/// perf's sched_switch text -> our canonical tuple string.
fn perf_switch(cpu: u32, time: &str, f: &str) -> String {
    let (left, right) = f.split_once(" ==> ").expect("sched_switch has ==>");
    let prev_comm = between(left, "prev_comm=", " prev_pid=");
    let prev_pid = between(left, " prev_pid=", " prev_prio=");
    let prev_prio = between(left, " prev_prio=", " prev_state=");
    let prev_state = between(left, " prev_state=", "\u{0}");
    let next_comm = between(right, "next_comm=", " next_pid=");
    let next_pid = between(right, " next_pid=", " next_prio=");
    let next_prio = between(right, " next_prio=", "\u{0}").trim();
    format!("{time} {cpu} {prev_comm}|{prev_pid}|{prev_prio}|{prev_state} -> {next_comm}|{next_pid}|{next_prio}")
}

fn our_switches(t: &Trace) -> Vec<String> {
    t.events
        .iter()
        .filter_map(|e| match e.data {
            EventData::Switch {
                prev_tid,
                prev_prio,
                prev_state,
                prev_comm,
                next_tid,
                next_prio,
                next_comm,
            } => Some(format!(
                "{}.{:09} {} {}|{}|{}|{} -> {}|{}|{}",
                e.ts.0 / 1_000_000_000,
                e.ts.0 % 1_000_000_000,
                e.cpu.0,
                t.strings.get(prev_comm),
                prev_tid.0,
                prev_prio,
                prev_state.to_text(),
                t.strings.get(next_comm),
                next_tid.0,
                next_prio
            )),
            _ => None,
        })
        .collect()
}

fn check_against_perf_script(path: &Path) {
    let trace = schedscope_parser::load(path).expect("decode");
    let text = perf_script(path);
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut switches = Vec::new();
    for l in text.lines() {
        let Some((cpu, time, event, fields)) = split_line(l) else {
            continue;
        };
        if event == "sched:sched_switch" {
            switches.push(perf_switch(cpu, &time, &fields));
        }
        *counts.entry(event).or_default() += 1;
    }
    assert!(
        counts.get("sched:sched_switch").copied().unwrap_or(0) > 100,
        "{counts:?}"
    );
    assert_eq!(trace.events_by_name, counts, "count per event name");
    assert_eq!(trace.events.len() as u64, counts.values().sum::<u64>());
    // perf script prints in time order, ties in file order (its ordered
    // events queue); our sort is stable in file order too: compare in order
    let ours = our_switches(&trace);
    let theirs = switches;
    assert_eq!(ours.len(), theirs.len());
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "sched_switch #{i}");
    }
    // events are time-sorted
    assert!(trace.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    // tasks: perf's thread table (comm and pid of every sample's tid, the
    // last one seen) agrees with ours
    let o = Command::new("perf")
        .args(["script", "-F", "comm,pid,tid", "-i"])
        .arg(path)
        .output()
        .expect("run perf script");
    let mut last: BTreeMap<i32, (String, i32)> = BTreeMap::new();
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let l = l.trim();
        let Some((comm, ids)) = l.rsplit_once(' ') else {
            continue;
        };
        let Some((pid, tid)) = ids.split_once('/') else {
            continue;
        };
        let (Ok(pid), Ok(tid)) = (pid.parse::<i32>(), tid.parse::<i32>()) else {
            continue;
        };
        last.insert(tid, (comm.trim().to_string(), pid));
    }
    assert!(last.len() > 40, "{} tids", last.len());
    let (mut bad_pid, mut bad_comm) = (Vec::new(), Vec::new());
    for (tid, (comm, pid)) in &last {
        if *tid <= 0 {
            // the per-CPU idle tasks share tid 0 (perf calls it "swapper");
            // -1 is perf's "no thread"
            continue;
        }
        let t = schedscope_trace::Tid(*tid);
        if *pid >= 0 && trace.tasks.tgid(t) != Some(schedscope_trace::Tid(*pid)) {
            bad_pid.push(format!(
                "tid {tid}: perf pid {pid}, ours {:?}",
                trace.tasks.tgid(t)
            ));
        }
        if *comm == format!(":{tid}") {
            // perf has no COMM for this thread (its COMM/FORK record was
            // lost or never written) and prints ":<tid>": nothing to compare.
            // We name it from the sched_switch payloads instead.
            continue;
        }
        if trace.tasks.comm(t) != comm {
            bad_comm.push(format!(
                "tid {tid}: perf {comm:?}, ours {:?}",
                trace.tasks.comm(t)
            ));
        }
    }
    assert!(bad_pid.is_empty(), "tgid differs from perf's: {bad_pid:#?}");
    // perf prints the comm at the sample's time, we keep the final one: a
    // task that exec'd after its last sample (a shell running `cat`) differs.
    assert!(
        bad_comm.len() * 100 <= last.len(),
        "comm differs from perf's for more than 1% of tids: {bad_comm:#?}"
    );
    assert!(
        !bad_comm.iter().any(|b| b.contains("sched-messaging")),
        "{bad_comm:#?}"
    );
    // perf 6.x writes an empty kallsyms into the tracing data; nothing else
    // in a clean recording deserves a warning beyond lost events
    assert!(
        trace
            .warnings
            .iter()
            .all(|w| w.severity != schedscope_trace::Severity::Error
                && (w.severity == schedscope_trace::Severity::Info || w.message.contains("lost"))),
        "{:#?}",
        trace.warnings
    );
    assert_eq!(
        trace.meta.nr_cpus_online,
        std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32)
    );
}

#[test]
fn uncompressed_matches_perf_script() {
    if let Some(r) = skip_reason() {
        eprintln!("SKIPPED uncompressed_matches_perf_script: {r}");
        return;
    }
    let p = record(&[], "plain.data");
    check_against_perf_script(&p);
    let _ = std::fs::remove_file(&p);
}

#[test]
fn zstd_compressed_matches_perf_script() {
    if let Some(r) = skip_reason() {
        eprintln!("SKIPPED zstd_compressed_matches_perf_script: {r}");
        return;
    }
    let p = record(&["-z"], "z.data");
    let data = std::fs::read(&p).expect("read");
    // the file really is compressed: it carries HEADER_COMPRESSED
    let feat = u64::from_le_bytes(data[72..80].try_into().unwrap());
    assert!(
        feat & (1 << 27) != 0,
        "perf record -z wrote HEADER_COMPRESSED"
    );
    check_against_perf_script(&p);
    let _ = std::fs::remove_file(&p);
}
