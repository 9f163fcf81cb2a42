//! Oracle test on a real recording: a munmap-heavy two-thread workload (this
//! test process itself) recorded with `perf record -g -a` and the csd / ipi /
//! tlb tracepoints, analysed by schedscope and checked against `perf script`
//! on the same file and against /proc/kallsyms:
//!
//! * TLB shootdowns exist, their function symbolizes to `flush_tlb_func` and
//!   their stacks contain the munmap path;
//! * per class, the number of targets equals the number of `csd_queue_cpu`
//!   lines with that `func=` in `perf script` output (on a 2-CPU machine each
//!   request has one target, so the request count equals it too);
//! * reschedule IPIs equal `ipi_send_cpu` lines with `callback=0x0`;
//! * callsite and function names (with offsets) equal perf's, as multisets;
//! * a handful of symbolized addresses agree with /proc/kallsyms;
//! * a `perf record -g -e ipi:ipi_send_cpumask,tlb:tlb_flush -a` file works
//!   too (counts from tlb_flush "remote IPI send", as `perf script` shows);
//! * the cpu-clock profile: sample count as `perf script`, self samples of
//!   the top kernel symbols as `perf report --no-children -n`.
//!
//! Needs root, perf and tracefs with the csd/ipi/tlb events; skips with a
//! message otherwise.

use schedscope_analysis::tlb::{self, IpiClass, TlbReport};
use schedscope_analysis::{Context, Options, Timeline};
use schedscope_render::RenderText;
use schedscope_testkit::{self as testkit, run, tmpdir};
use schedscope_trace::symbols::{chain_locations, is_kernel_addr, Location, SymbolTable};
use schedscope_trace::{EventData, Sym, Tid, Trace};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const EVENTS: &str = "csd:csd_queue_cpu,csd:csd_function_entry,csd:csd_function_exit,\
ipi:ipi_send_cpu,ipi:ipi_send_cpumask,tlb:tlb_flush,irq_vectors:call_function_single_entry,\
sched:sched_switch";

fn tracefs() -> Option<&'static str> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .find(|d| Path::new(d).join("events/sched").exists())
}

fn skip_reason() -> Option<String> {
    if !testkit::proc_self_owned_by_root() {
        return Some("not root".into());
    }
    if !testkit::perf_starts() {
        return Some("perf not installed".into());
    }
    let Some(fs) = tracefs() else {
        return Some("tracefs not mounted".into());
    };
    for e in ["csd/csd_queue_cpu", "ipi/ipi_send_cpu", "tlb/tlb_flush"] {
        if !Path::new(fs).join("events").join(e).exists() {
            return Some(format!("kernel has no {e} tracepoint"));
        }
    }
    None
}

/// Record `perf record -g -a -e EVENTS -- sleep SECS` while two threads of
/// this process map, touch and unmap 64 MiB areas (glibc serves allocations
/// that large with mmap/munmap), so each munmap shoots down the other CPU.
fn record(out: &Path, events: &str, secs: &str) {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut v: Vec<u8> = vec![0; 64 << 20];
                    for i in (0..v.len()).step_by(4096 * 64) {
                        v[i] = 1;
                    }
                    std::hint::black_box(&v);
                    drop(v);
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let res = Command::new("perf")
        .args(["record", "-q", "-g", "-a", "-e", events, "-o"])
        .arg(out)
        .args(["--", "sleep", secs])
        .output();
    stop.store(true, Ordering::Relaxed);
    let rounds: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let res = res.unwrap();
    assert!(
        res.status.success(),
        "perf record failed: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert!(rounds > 0);
}

fn analyze(trace: &Trace) -> (TlbReport, Timeline) {
    let tl = Timeline::build(trace);
    let opts = Options {
        top: 10,
        ..Options::default()
    };
    let r = tlb::analyze(&Context {
        trace,
        timeline: &tl,
        opts: &opts,
    })
    .unwrap();
    (r, tl)
}

/// Value of `key=` in a perf script trace line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = line.find(key)?;
    line[i + key.len()..].split_whitespace().next()
}

/// `perf script` csd_queue_cpu lines: (callsite, func) in file order, and
/// the number of ipi_send_cpu lines with a NULL callback.
fn perf_script_ipis(data: &Path) -> (Vec<(String, String)>, u64) {
    let text = run(Command::new("perf")
        .args(["script", "-F", "event,trace", "-i"])
        .arg(data));
    let mut csd = Vec::new();
    let mut resched = 0;
    for l in text.lines() {
        if l.contains("csd:csd_queue_cpu:") {
            let cs = field(l, "callsite=").unwrap().to_string();
            let f = field(l, "func=").unwrap().to_string();
            csd.push((cs, f));
        } else if l.contains("ipi:ipi_send_cpu:") && field(l, "callback=") == Some("0x0") {
            resched += 1;
        }
    }
    (csd, resched)
}

/// /proc/kallsyms: start address -> names (aliases share an address), sorted.
fn proc_kallsyms() -> Vec<(u64, Vec<String>)> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let mut m: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for l in text.lines() {
        let mut it = l.split_whitespace();
        let (Some(a), Some(_t), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(a) = u64::from_str_radix(a, 16) else {
            continue;
        };
        if a != 0 {
            m.entry(a).or_default().push(name.to_string());
        }
    }
    m.into_iter().collect()
}

#[test]
fn real_recording_tlb_shootdowns_match_perf_script() {
    // (symbols from the host too, as the binary installs them)
    schedscope_symbolize::install();
    if let Some(why) = skip_reason() {
        println!("SKIPPED tlb real recording: {why}");
        return;
    }
    let dir = tmpdir("tlb");
    let data = dir.join("tlb.data");
    record(&data, EVENTS, "1.5");
    let trace = schedscope_parser::load(&data).unwrap();
    let (r, _tl) = analyze(&trace);
    assert_eq!(r.source, "csd:csd_queue_cpu");
    assert!(r.shootdowns > 0, "no shootdowns: {r:#?}");

    // Per class: targets == perf script csd_queue_cpu lines with that func.
    let (perf_csd, perf_resched) = perf_script_ipis(&data);
    let mut want: HashMap<IpiClass, u64> = HashMap::new();
    for (_, f) in &perf_csd {
        *want
            .entry(IpiClass::of_function(Some(f.as_str())))
            .or_default() += 1;
    }
    let got = |c: IpiClass| r.ipi_classes.iter().find(|x| x.class == c);
    for c in [
        IpiClass::TlbShootdown,
        IpiClass::RemoteWakeup,
        IpiClass::IdleBalanceKick,
    ] {
        let w = want.get(&c).copied().unwrap_or(0);
        assert_eq!(got(c).map(|x| x.targets).unwrap_or(0), w, "{c:?} targets");
        if trace.nr_cpus == 2 {
            assert_eq!(got(c).map(|x| x.count).unwrap_or(0), w, "{c:?} requests");
        }
    }
    assert_eq!(r.shootdowns, got(IpiClass::TlbShootdown).unwrap().count);
    assert_eq!(
        got(IpiClass::Reschedule).map(|x| x.count).unwrap_or(0),
        perf_resched,
        "reschedule IPIs vs ipi_send_cpu callback=0x0 lines"
    );

    // Function and stack of shootdowns.
    assert!(r
        .top_callsites
        .iter()
        .filter(|c| c.class == IpiClass::TlbShootdown)
        .all(|c| c.callback == "flush_tlb_func"));
    let munmap_stacks: u64 = r
        .top_stacks
        .iter()
        .filter(|s| {
            s.class == IpiClass::TlbShootdown && s.frames.iter().any(|f| f.contains("munmap"))
        })
        .map(|s| s.count)
        .sum();
    assert!(munmap_stacks > 0, "no munmap stack: {:#?}", r.top_stacks);
    assert!(r.tlb_flush_by_reason.contains_key("remote shootdown"));

    // Callsite and func names, with offsets, as multisets against perf script.
    let mut locs = Vec::new();
    let mut ours_raw = Vec::new();
    for e in &trace.events {
        if let EventData::CsdQueue { callsite, func, .. } = e.data {
            locs.push(Location::kernel(callsite));
            locs.push(Location::kernel(func));
            ours_raw.push((callsite, func));
        }
    }
    let st = SymbolTable::build(&trace, locs);
    let mut ours: Vec<(String, String)> = ours_raw
        .iter()
        .map(|&(c, f)| {
            (
                st.get(Location::kernel(c)).with_offset(),
                st.get(Location::kernel(f)).with_offset(),
            )
        })
        .collect();
    let mut theirs = perf_csd.clone();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "callsite/func names differ from perf script");

    // A handful of addresses (callsites, funcs, stack frames) vs /proc/kallsyms.
    let ks = proc_kallsyms();
    let mut addrs: Vec<u64> = ours_raw
        .iter()
        .flat_map(|&(c, f)| [c.0, f.0])
        .chain(
            trace
                .stacks
                .iter()
                .flat_map(|s| chain_locations(s, None))
                .filter(|l| !l.user)
                .map(|l| l.sym.0),
        )
        .filter(|&a| is_kernel_addr(a))
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert!(addrs.len() >= 5);
    let step = addrs.len() / 8 + 1;
    let sample: Vec<u64> = addrs.iter().step_by(step).copied().collect();
    let st = SymbolTable::build(&trace, sample.iter().map(|&a| Location::kernel(Sym(a))));
    let mut named = 0;
    for &a in &sample {
        let got = st.get(Location::kernel(Sym(a)));
        let i = ks.partition_point(|(s, _)| *s <= a);
        let Some(name) = got.name.as_ref() else {
            // Unsymbolized: /proc/kallsyms has no symbol within 1 MiB below
            // it either (perf script prints [unknown] for these).
            assert!(
                i == 0 || a - ks[i - 1].0 >= 1 << 20,
                "0x{a:x} unsymbolized but /proc/kallsyms has {:?}",
                ks[i - 1]
            );
            continue;
        };
        assert!(i > 0, "0x{a:x} is below every /proc/kallsyms address");
        let (start, names) = &ks[i - 1];
        assert!(
            names.contains(name),
            "0x{a:x}: ours {got:?}, /proc/kallsyms {names:?} at 0x{start:x}"
        );
        assert_eq!(got.offset, a - start, "offset of 0x{a:x}");
        named += 1;
    }
    assert!(
        named >= 4,
        "only {named} of {} sampled addresses symbolized",
        sample.len()
    );

    // User frames of this (live) process are symbolized by blazesym.
    let me = std::process::id() as i32;
    let user: Vec<Location> = trace
        .events
        .iter()
        .filter(|e| e.tid.0 != 0 && trace.tasks.tgid(e.tid) == Some(Tid(me)))
        .filter_map(|e| trace.stack(e.stack))
        .flat_map(|s| chain_locations(s, Some(Tid(me))))
        .filter(|l| l.user && l.sym.0 != 0)
        .collect();
    if !user.is_empty() {
        let st = SymbolTable::build(&trace, user.iter().copied());
        let named = user.iter().filter(|l| st.get(**l).is_symbolized()).count();
        assert!(
            named > 0,
            "no user frame of the live test process symbolized"
        );
    } else {
        println!("note: no user frames recorded for pid {me}");
    }

    // The text report renders.
    let opts = Options {
        top: 5,
        ..Options::default()
    };
    let mut out = Vec::new();
    r.render_text(&schedscope_render::TextOptions { top: opts.top }, &mut out)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with(&format!("TLB shootdowns: {} (", r.shootdowns)));
    println!("{text}");

    // The same file as `perf script -G` text gives the same classes,
    // callsites and tlb_flush counts (latencies within the microsecond that
    // the text's timestamps keep).
    let txt = dir.join("tlb.txt");
    let script = run(Command::new("perf").args(["script", "-G", "-i"]).arg(&data));
    std::fs::write(&txt, script).unwrap();
    let ttrace = schedscope_parser::load(&txt).unwrap();
    let (t, _) = analyze(&ttrace);
    assert_eq!(t.shootdowns, r.shootdowns);
    assert_eq!(t.ipi_classes.len(), r.ipi_classes.len());
    for (a, b) in t.ipi_classes.iter().zip(&r.ipi_classes) {
        assert_eq!(
            (a.class, a.count, a.targets, a.ipis_sent, &a.targets_hist),
            (b.class, b.count, b.targets, b.ipis_sent, &b.targets_hist)
        );
        match (&a.delivery, &b.delivery) {
            (Some(x), Some(y)) => {
                assert_eq!(x.count, y.count, "{:?} deliveries", a.class);
                assert!(
                    x.max_ns.abs_diff(y.max_ns) <= 1000,
                    "{:?}: {x:?} {y:?}",
                    a.class
                );
            }
            (x, y) => assert_eq!(x.is_some(), y.is_some(), "{:?} delivery", a.class),
        }
    }
    let key = |r: &TlbReport| {
        let mut v: Vec<_> = r
            .top_callsites
            .iter()
            .map(|c| (c.callsite.clone(), c.callback.clone(), c.class, c.count))
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(&t), key(&r), "callsites: text vs perf.data");
    let flush = |r: &TlbReport| -> BTreeMap<String, u64> {
        r.tlb_flush_by_reason
            .iter()
            .map(|(k, v)| (k.clone(), v.count))
            .collect()
    };
    assert_eq!(flush(&t), flush(&r));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perf_record_cpumask_and_tlb_flush_only() {
    // (symbols from the host too, as the binary installs them)
    schedscope_symbolize::install();
    if let Some(why) = skip_reason() {
        println!("SKIPPED tlb perf cpumask recording: {why}");
        return;
    }
    let dir = tmpdir("tlb-mask");
    let data = dir.join("mask.data");
    record(&data, "ipi:ipi_send_cpumask,tlb:tlb_flush", "1");
    let trace = schedscope_parser::load(&data).unwrap();
    let (r, _) = analyze(&trace);
    let text = run(Command::new("perf")
        .args(["script", "-F", "event,trace", "-i"])
        .arg(&data));
    let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
    let mut cpumask_lines = 0u64;
    for l in text.lines() {
        if l.contains("tlb:tlb_flush:") {
            let Some(i) = l.find("reason:") else { continue };
            let name = l[i + 7..].rsplit_once(" (").map(|x| x.0).unwrap_or("");
            *by_reason.entry(name.trim().to_string()).or_default() += 1;
        } else if l.contains("ipi:ipi_send_cpumask:") {
            cpumask_lines += 1;
        }
    }
    let ours: BTreeMap<String, u64> = r
        .tlb_flush_by_reason
        .iter()
        .map(|(k, v)| (k.clone(), v.count))
        .collect();
    assert_eq!(ours, by_reason, "tlb_flush per reason vs perf script");
    if cpumask_lines == 0 {
        // 2 CPUs: no cpumask IPIs; shootdowns come from "remote IPI send".
        assert_eq!(r.source, "tlb:tlb_flush remote IPI send");
        assert_eq!(
            r.shootdowns,
            by_reason.get("remote IPI send").copied().unwrap_or(0)
        );
    } else {
        let n: u64 = r.ipi_classes.iter().map(|c| c.count).sum();
        assert_eq!(n, cpumask_lines, "requests vs ipi_send_cpumask lines");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cpu_clock_profile_matches_perf_script_leaf_symbols() {
    // (symbols from the host too, as the binary installs them)
    schedscope_symbolize::install();
    if let Some(why) = skip_reason() {
        println!("SKIPPED tlb cpu-clock profile: {why}");
        return;
    }
    let dir = tmpdir("tlb-prof");
    let data = dir.join("prof.data");
    record(&data, "cpu-clock", "1");
    let trace = schedscope_parser::load(&data).unwrap();
    let tl = Timeline::build(&trace);
    let opts = Options {
        top: 10,
        ..Options::default()
    };
    let ctx = Context {
        trace: &trace,
        timeline: &tl,
        opts: &opts,
    };
    let p = tlb::analyze_profile(&ctx).expect("no cpu-clock samples decoded");

    // Sample count: perf script prints one `cpu-clock:` line per sample.
    let text = run(Command::new("perf")
        .args(["script", "-F", "event", "-i"])
        .arg(&data));
    let samples = text.lines().filter(|l| l.starts_with("cpu-clock")).count() as u64;
    assert_eq!(p.samples, samples, "samples vs perf script");
    // Self samples per kernel symbol: `perf report --no-children -n`, whose
    // rows count samples by their IP (as the oprofile listing does).
    let report = run(Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
            "-n",
            "-g",
            "none",
            "-i",
        ])
        .arg(&data));
    let mut top: Vec<(String, u64)> = Vec::new();
    for l in report.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 4 && f[2] == "[k]" && f[0].ends_with('%') {
            if let Ok(n) = f[1].parse::<u64>() {
                top.push((f[3..].join(" "), n));
            }
        }
    }
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    assert!(!top.is_empty(), "no kernel rows in perf report");
    // Symbols sharing a start address are aliases: either name may be chosen.
    let ks = proc_kallsyms();
    let aliases = |sym: &str| -> Vec<String> {
        ks.iter()
            .find(|(_, names)| names.iter().any(|n| n == sym))
            .map(|(_, names)| names.clone())
            .unwrap_or_else(|| vec![sym.to_string()])
    };
    for (sym, n) in top.iter().take(5) {
        let names = aliases(sym);
        let ours: u64 = p
            .top
            .iter()
            .filter(|r| names.contains(&r.symbol) && r.module == "[kernel.kallsyms]")
            .map(|r| r.samples)
            .sum();
        assert_eq!(ours, *n, "self samples of {sym} (aliases {names:?})");
    }
    let mut out = Vec::new();
    p.render_text(
        &schedscope_render::TextOptions { top: ctx.opts.top },
        &mut out,
    )
    .unwrap();
    println!("{}", String::from_utf8_lossy(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
