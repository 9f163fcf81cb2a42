//! User frames of a process that exited before the report are symbolized
//! through the MMAP records of the trace, to the names `perf script` gives
//! the same frames of the same events. Needs root and perf; records the
//! bundled ebizzy workload with `schedscope record --call-graph` and with
//! Debian's `perf record -g`.

use schedscope_trace::symbols::{chain_locations, Location, SymbolTable};
use schedscope_trace::Trace;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_schedscope");

/// One frame as `perf script -F ip,sym,symoff,dso` prints it.
#[derive(Debug)]
struct PerfFrame {
    sym: String,
    off: u64,
    dso: String,
}

/// `perf script` call chains of the workload's events by (tid, ns, event).
fn perf_chains(file: &Path) -> HashMap<(i32, u64, String), Vec<PerfFrame>> {
    let out = Command::new("perf")
        .args([
            "script",
            "--ns",
            "--comms",
            "ebizzy-0,ebizzy-1",
            "-F",
            "tid,time,event,ip,sym,symoff,dso",
            "-i",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf script failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut chains: HashMap<(i32, u64, String), Vec<PerfFrame>> = HashMap::new();
    let mut current: Option<(i32, u64, String)> = None;
    for line in text.lines() {
        if let Some(l) = line.strip_prefix('\t') {
            // "  101a07 __munmap+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)"
            let Some(key) = &current else { continue };
            let (_ip, rest) = l.trim().split_once(' ').unwrap();
            let (sym, dso) = rest.rsplit_once(" (").unwrap();
            let (sym, off) = match sym.rsplit_once("+0x") {
                Some((s, o)) => (s, u64::from_str_radix(o, 16).unwrap()),
                None => (sym, 0),
            };
            chains.entry(key.clone()).or_default().push(PerfFrame {
                sym: sym.to_string(),
                off,
                dso: dso.trim_end_matches(')').to_string(),
            });
            continue;
        }
        // "27936  4296.252400550:    csd:csd_queue_cpu: " (events without a
        // chain print their ip on this line too)
        current = None;
        let mut it = line.split_whitespace();
        let (Some(tid), Some(time), Some(event)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let (Ok(tid), Some((s, ns))) = (
            tid.parse::<i32>(),
            time.trim_end_matches(':').split_once('.'),
        ) else {
            continue;
        };
        let (Ok(s), Ok(ns)) = (s.parse::<u64>(), ns.parse::<u64>()) else {
            continue;
        };
        let key = (
            tid,
            s * 1_000_000_000 + ns,
            event.trim_end_matches(':').to_string(),
        );
        if chains.contains_key(&key) {
            continue; // two events of one name, thread and time: ambiguous
        }
        chains.insert(key.clone(), Vec::new());
        current = Some(key);
    }
    chains
}

/// What the comparison found.
#[derive(Default, Debug)]
struct Tally {
    events: usize,
    user_frames: usize,
    same_name: usize,
    names: Vec<(String, String)>,
}

/// Symbolize the workload's user frames from the trace alone (the process
/// is gone) and compare them with perf's names for the same frames.
fn compare(file: &Path, ebizzy: &Path) -> Tally {
    let trace: Trace = schedscope_parser::load(file).unwrap();
    assert!(
        !trace.mappings.is_empty(),
        "{}: MMAP records decoded",
        file.display()
    );
    let pid = trace
        .mappings
        .iter()
        .find(|m| Path::new(&m.filename) == ebizzy)
        .map(|m| m.pid)
        .expect("a mapping of the ebizzy binary");
    assert!(
        std::fs::read_to_string(format!("/proc/{}/comm", pid.0))
            .map_or(true, |c| !c.starts_with("schedscope-ebiz")),
        "the workload has exited"
    );
    let events: Vec<_> = trace
        .events
        .iter()
        .filter(|e| {
            let n = trace.event_names.get(e.name.0 as usize).map(String::as_str);
            matches!(n, Some("tlb:tlb_flush" | "csd:csd_queue_cpu"))
                && trace.tasks.tgid(e.tid) == Some(pid)
        })
        .filter_map(|e| Some((e, trace.stack(e.stack)?)))
        .collect();
    let locs: Vec<Vec<Location>> = events
        .iter()
        .map(|(_, st)| chain_locations(st, Some(pid)))
        .collect();
    let syms = SymbolTable::build(&trace, locs.iter().flatten().copied());
    let perf = perf_chains(file);
    let mut t = Tally::default();
    for ((e, _), locs) in events.iter().zip(&locs) {
        let key = (
            e.tid.0,
            e.ts.0,
            trace.event_names[e.name.0 as usize].clone(),
        );
        let Some(pf) = perf.get(&key).filter(|pf| !pf.is_empty()) else {
            continue;
        };
        assert_eq!(pf.len(), locs.len(), "same chain as perf for {key:?}");
        t.events += 1;
        for (l, p) in locs.iter().zip(pf) {
            if !l.user || p.sym == "[unknown]" {
                continue;
            }
            t.user_frames += 1;
            let r = syms.get(*l);
            assert!(
                r.is_symbolized(),
                "{key:?}: perf names {p:?}, we gave {r:?}"
            );
            assert_eq!(r.module, p.dso, "{key:?}: module of {p:?}");
            assert_eq!(r.offset, p.off, "{key:?}: offset, perf {p:?}, ours {r:?}");
            let ours = r.function();
            if ours == p.sym {
                t.same_name += 1;
            }
            t.names.push((ours, p.sym.clone()));
        }
    }
    t
}

fn check(t: &Tally, what: &str) {
    eprintln!(
        "{what}: {} events compared, {} user frames, {} named as perf does",
        t.events, t.user_frames, t.same_name
    );
    assert!(t.events > 0 && t.user_frames > 0, "{what}: {t:?}");
    // The workload's munmap path and its worker function, named like perf does.
    assert!(
        t.names
            .iter()
            .any(|(o, p)| o.contains("munmap") && p.contains("munmap")),
        "{what}: munmap frame: {:?}",
        t.names
    );
    assert!(
        t.names
            .iter()
            .any(|(o, p)| o == p && o.contains("schedscope_ebizzy") && o.contains("worker")),
        "{what}: ebizzy worker frame: {:?}",
        t.names
    );
    // Aliases of one function (weak `munmap`, global `__munmap`, local
    // `__GI___munmap`) are named the way perf chooses: every name agrees.
    assert_eq!(t.same_name, t.user_frames, "{what}: {:?}", {
        let mut d: Vec<_> = t.names.iter().filter(|(o, p)| o != p).collect();
        d.sort();
        d.dedup();
        d
    });
}

fn setup() -> Option<(PathBuf, PathBuf)> {
    if !schedscope_testkit::effective_uid_is_root() || !schedscope_testkit::perf_starts() {
        eprintln!("SKIPPED: needs root and perf");
        return None;
    }
    let ebizzy = Path::new(BIN).with_file_name("schedscope-ebizzy");
    if !ebizzy.is_file() {
        eprintln!(
            "SKIPPED: {} not built (cargo build -p schedscope-ebizzy)",
            ebizzy.display()
        );
        return None;
    }
    let dir = schedscope_testkit::tmpdir("tlbsym");
    Some((dir, ebizzy))
}

#[test]
fn exited_workload_user_frames_match_perf_script_schedscope_record() {
    // (symbols from the host too, as the binary installs them)
    schedscope_symbolize::install();
    let Some((dir, ebizzy)) = setup() else { return };
    let file = dir.join("s.data");
    let out = Command::new(BIN)
        .args(["record", "--call-graph", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&ebizzy)
        .args(["-t", "2", "-S", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = compare(&file, &ebizzy);
    check(&t, "schedscope record");
    // The report names them too (no "unsymbolized user frames" for them).
    let rep = Command::new(BIN)
        .args(["report", "--tlb"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(rep.status.success(), "{text}");
    assert!(text.contains("schedscope_ebizzy::worker"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exited_workload_user_frames_match_perf_script_perf_record() {
    // (symbols from the host too, as the binary installs them)
    schedscope_symbolize::install();
    let Some((dir, ebizzy)) = setup() else { return };
    let file = dir.join("p.data");
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-g",
            "-a",
            "-e",
            "csd:csd_queue_cpu,tlb:tlb_flush",
            "-o",
        ])
        .arg(&file)
        .arg("--")
        .arg(&ebizzy)
        .args(["-t", "2", "-S", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = compare(&file, &ebizzy);
    check(&t, "perf record");
    let _ = std::fs::remove_dir_all(&dir);
}
