//! Decoding the committed perf.data fixtures (fixtures/perf/, provenance in
//! its README.md) against the `perf script` output committed next to them.
//! Runs everywhere: no perf needed.

use schedscope_trace::{EventData, Trace};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perf")
        .join(name)
}

fn load(name: &str) -> Trace {
    schedscope_parser::load(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `<event> <count>` lines.
fn expected_counts(name: &str) -> BTreeMap<String, u64> {
    read(name)
        .lines()
        .filter_map(|l| {
            let (e, c) = l.rsplit_once(' ')?;
            Some((e.to_string(), c.parse().ok()?))
        })
        .collect()
}

fn between<'a>(s: &'a str, a: &str, b: &str) -> &'a str {
    let start = s.find(a).map(|i| i + a.len()).unwrap_or(s.len());
    let end = s[start..].find(b).map(|i| start + i).unwrap_or(s.len());
    &s[start..end]
}

/// Reduce one perf script line (`[CPU] TIME: EVENT: FIELDS`) to the fields
/// schedscope models, in a canonical text.
fn perf_line(l: &str) -> Option<String> {
    let rest = l.trim_start().strip_prefix('[')?;
    let (cpu, rest) = rest.split_once(']')?;
    let (time, rest) = rest.trim_start().split_once(": ")?;
    let (event, f) = rest.trim_start().split_once(": ")?;
    let cpu: u32 = cpu.parse().ok()?;
    let body = match event {
        "sched:sched_switch" => {
            let (l, r) = f.split_once(" ==> ")?;
            format!(
                "{}|{}|{}|{} -> {}|{}|{}",
                between(l, "prev_comm=", " prev_pid="),
                between(l, " prev_pid=", " prev_prio="),
                between(l, " prev_prio=", " prev_state="),
                between(l, " prev_state=", "\0"),
                between(r, "next_comm=", " next_pid="),
                between(r, " next_pid=", " next_prio="),
                between(r, " next_prio=", "\0").trim()
            )
        }
        "sched:sched_waking" | "sched:sched_wakeup" | "sched:sched_wakeup_new" => format!(
            "{}|{}|{}|{}",
            between(f, "comm=", " pid="),
            between(f, " pid=", " prio="),
            between(f, " prio=", " target_cpu="),
            between(f, " target_cpu=", "\0")
                .trim()
                .parse::<u32>()
                .ok()?
        ),
        "sched:sched_migrate_task" => format!(
            "{}|{}|{}|{}",
            between(f, "comm=", " pid="),
            between(f, " pid=", " prio="),
            between(f, " orig_cpu=", " dest_cpu="),
            between(f, " dest_cpu=", "\0").trim()
        ),
        "sched:sched_process_fork" => format!(
            "{}|{}|{}",
            between(f, " pid=", " child_comm="),
            between(f, " child_comm=", " child_pid="),
            between(f, " child_pid=", "\0").trim()
        ),
        "sched:sched_process_exit" => format!(
            "{}|{}",
            between(f, "comm=", " pid="),
            between(f, " pid=", " prio=")
        ),
        "sched:sched_process_exec" => format!(
            "{}|{}",
            between(f, "filename=", " pid="),
            between(f, " pid=", " old_pid=")
        ),
        "ipi:ipi_send_cpu" => between(f, "cpu=", " callsite=").to_string(),
        "csd:csd_queue_cpu" => format!(
            "{}|{}",
            between(f, "cpu=", " callsite="),
            between(f, " csd=", "\0").trim()
        ),
        _ => return None,
    };
    Some(format!("{} {cpu} {event} {body}", time.trim()))
}

fn our_line(t: &Trace, e: &schedscope_trace::Event) -> Option<String> {
    let s = |id| t.strings.get(id);
    let body = match e.data {
        EventData::Switch {
            prev_tid,
            prev_prio,
            prev_state,
            prev_comm,
            next_tid,
            next_prio,
            next_comm,
        } => format!(
            "{}|{}|{}|{} -> {}|{}|{}",
            s(prev_comm),
            prev_tid,
            prev_prio,
            prev_state.to_text(),
            s(next_comm),
            next_tid,
            next_prio
        ),
        EventData::Wakeup {
            tid,
            comm,
            prio,
            target_cpu,
            ..
        } => format!("{}|{}|{}|{}", s(comm), tid, prio, target_cpu),
        EventData::Migrate {
            tid,
            comm,
            orig_cpu,
            dest_cpu,
        } => format!("{}|{}|{}|{}", s(comm), tid, orig_cpu, dest_cpu),
        EventData::Fork {
            parent_tid,
            child_tid,
            child_comm,
        } => format!("{}|{}|{}", parent_tid, s(child_comm), child_tid),
        EventData::Exit { tid, comm } => format!("{}|{}", s(comm), tid),
        EventData::Exec { tid, filename } => format!("{}|{}", s(filename), tid),
        EventData::IpiSendCpu { cpu, .. } => format!("{cpu}"),
        EventData::CsdQueue { cpu, csd, .. } => format!("{cpu}|0x{csd:x}"),
        _ => return None,
    };
    Some(format!(
        "{}.{:09} {} {} {body}",
        e.ts.0 / 1_000_000_000,
        e.ts.0 % 1_000_000_000,
        e.cpu,
        t.event_name(e.name)
    ))
}

fn check_script(trace: &Trace, script: &str) {
    let theirs: Vec<String> = read(script).lines().filter_map(perf_line).collect();
    let ours: Vec<String> = trace
        .events
        .iter()
        .filter_map(|e| our_line(trace, e))
        .collect();
    assert!(theirs.len() > 500, "{script}: {} lines", theirs.len());
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{script}: number of modelled events"
    );
    // same order of timestamps (perf script prints in time order)
    let t = |v: &Vec<String>| -> Vec<String> {
        v.iter()
            .map(|l| l.split(' ').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(t(&ours), t(&theirs), "{script}: time order");
    let (mut a, mut b) = (ours.clone(), theirs.clone());
    a.sort();
    b.sort();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "{script}");
    }
}

#[test]
fn sched_small_fields_equal_perf_script() {
    let t = load("sched_small.data");
    assert_eq!(t.events_by_name, expected_counts("sched_small.counts.txt"));
    check_script(&t, "sched_small.script.txt");
    assert_eq!(t.meta.os_release.as_deref(), Some("6.18.44-fc-v509"));
    assert_eq!(t.meta.nr_cpus_online, Some(2));
    assert_eq!(t.nr_cpus, 2);
    assert_eq!(t.lost, 0);
    // the exec'd `ls` is a known task with its tgid; forked children have
    // their parent's tgid when they are threads and their own otherwise
    let ls = t.tasks.iter().find(|k| k.comm == "ls").expect("ls task");
    assert_eq!(ls.tgid, Some(ls.tid));
    // tlb_flush: (pages, reason) histogram equals perf's
    // (sched_small.tlb.txt: `pages reason count` from perf script)
    let mut theirs: BTreeMap<(i64, i32), u64> = BTreeMap::new();
    for l in read("sched_small.tlb.txt").lines() {
        let v: Vec<&str> = l.split(' ').collect();
        theirs.insert(
            (v[0].parse().unwrap(), v[1].parse().unwrap()),
            v[2].parse().unwrap(),
        );
    }
    let mut ours: BTreeMap<(i64, i32), u64> = BTreeMap::new();
    for e in &t.events {
        if let EventData::TlbFlush { reason, pages } = e.data {
            *ours.entry((pages, reason)).or_default() += 1;
        }
    }
    assert_eq!(ours, theirs);
}

#[test]
fn zstd_fixture_equals_perf_script() {
    let t = load("sched_small_zstd.data");
    assert_eq!(
        t.events_by_name,
        expected_counts("sched_small_zstd.counts.txt")
    );
    check_script(&t, "sched_small_zstd.script.txt");
    assert!(t
        .warnings
        .iter()
        .all(|w| w.severity == schedscope_trace::Severity::Info));
}

#[test]
fn callchains_equal_perf_script() {
    let t = load("callchain.data");
    assert_eq!(t.events_by_name, expected_counts("callchain.counts.txt"));
    // perf script -F time,cpu,event,ip: a header line per sample, then one
    // indented hex address per frame (context markers omitted)
    let mut theirs = Vec::new();
    for l in read("callchain.script.txt").lines() {
        if l.starts_with('\t') || l.starts_with(' ') && !l.trim_start().starts_with('[') {
            let ip = u64::from_str_radix(l.trim(), 16).expect("hex ip");
            if let Some((_, v)) = theirs.last_mut() {
                let v: &mut Vec<u64> = v;
                v.push(ip);
            }
        } else if let Some(rest) = l.trim_start().strip_prefix('[') {
            let (_, rest) = rest.split_once(']').expect("cpu");
            let (time, rest) = rest.trim_start().split_once(": ").expect("time");
            let event = rest.trim().trim_end_matches(':').to_string();
            theirs.push((format!("{} {event}", time.trim()), Vec::new()));
        }
    }
    let ours: Vec<(String, Vec<u64>)> = t
        .events
        .iter()
        .map(|e| {
            (
                format!(
                    "{}.{:09} {}",
                    e.ts.0 / 1_000_000_000,
                    e.ts.0 % 1_000_000_000,
                    t.event_name(e.name)
                ),
                t.stack(e.stack).map(<[u64]>::to_vec).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(ours.len(), theirs.len());
    let (mut a, mut b) = (ours, theirs);
    a.sort();
    b.sort();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.0, y.0);
        // perf prints kernel frames as raw addresses, but user frames
        // relative to their mapped file and only when it finds the mapping:
        // compare the kernel part exactly and check we have at least as many
        // user frames as perf printed
        let kernel = |v: &Vec<u64>| {
            v.iter()
                .filter(|&&i| i >= 0xffff_8000_0000_0000)
                .map(|i| format!("{i:x}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let user = |v: &Vec<u64>| v.iter().filter(|&&i| i < 0xffff_8000_0000_0000).count();
        assert!(user(&x.1) >= user(&y.1), "user frames of {}", x.0);
        assert_eq!(kernel(&x.1), kernel(&y.1), "kernel call chain of {}", x.0);
    }
    assert!(
        t.stacks.len() < t.events.len(),
        "identical chains are stored once"
    );
    assert!(t.stacks.iter().all(|s| !s.is_empty()));
}
