//! Generated traces with hand-computed answers.

use super::*;
use crate::test_stream::{push_in, take_events, SLICINGS};
use crate::{CpuRun, Options, Timeline};
use schedscope_trace::symbols::PERF_CONTEXT_MAX;
use schedscope_trace::{
    Cpu, CpuMask, Event, EventData, KernelSymbols, MaskId, NameId, StackId, Sym, Tid, Trace,
    TraceFormat, Ts,
};
use std::collections::BTreeMap;

const K: u64 = 0xffff_ffff_8100_0000;
const SCMC: u64 = K; // smp_call_function_many_cond
const FLUSH: u64 = K + 0x100; // flush_tlb_func
const NFTM: u64 = K + 0x200; // native_flush_tlb_multi
const FTMR: u64 = K + 0x300; // flush_tlb_mm_range
const MUNMAP: u64 = K + 0x400; // __x64_sys_munmap
const OECC: u64 = K + 0x500; // on_each_cpu_cond_mask
const GENERIC: u64 = K + 0x600; // generic_smp_call_function_single_interrupt
const TTWU: u64 = K + 0x700; // sched_ttwu_pending
const WAKELIST: u64 = K + 0x800; // ttwu_queue_wakelist
const RESCHED: u64 = K + 0x900; // resched_curr
const CTX_KERNEL: u64 = (-128i64) as u64;
const CTX_USER: u64 = (-512i64) as u64;

fn kallsyms() -> KernelSymbols {
    let names = [
        "smp_call_function_many_cond",
        "flush_tlb_func",
        "native_flush_tlb_multi",
        "flush_tlb_mm_range",
        "__x64_sys_munmap",
        "on_each_cpu_cond_mask",
        "generic_smp_call_function_single_interrupt",
        "sched_ttwu_pending",
        "ttwu_queue_wakelist",
        "resched_curr",
        "_etext",
    ];
    KernelSymbols {
        syms: names
            .iter()
            .enumerate()
            .map(|(i, n)| (K + 0x100 * i as u64, n.to_string()))
            .collect(),
    }
}

struct B {
    t: Trace,
}

impl B {
    fn new() -> B {
        let mut t = Trace::new("gen", TraceFormat::PerfData);
        t.kernel_symbols = kallsyms();
        t.tasks.fork(Tid(100), Some(Tid(100)), "ebizzy", None);
        t.tasks.fork(Tid(101), Some(Tid(100)), "ebizzy", None);
        t.tasks.fork(Tid(200), Some(Tid(200)), "other", None);
        t.tasks.fork(Tid(300), Some(Tid(300)), "third", None);
        B { t }
    }
    fn ev(&mut self, ts: u64, cpu: u32, tid: i32, name: &str, data: EventData) -> &mut Self {
        self.evs(ts, cpu, tid, name, data, StackId::NONE)
    }
    fn evs(
        &mut self,
        ts: u64,
        cpu: u32,
        tid: i32,
        name: &str,
        data: EventData,
        stack: StackId,
    ) -> &mut Self {
        let id: NameId = self.t.intern_name(name);
        *self.t.events_by_name.entry(name.to_string()).or_default() += 1;
        self.t.events.push(Event {
            ts: Ts(ts),
            cpu: Cpu(cpu),
            tid: Tid(tid),
            name: id,
            stack,
            data,
        });
        self
    }
    fn stack(&mut self, frames: &[u64]) -> StackId {
        self.t.stacks.push(frames.to_vec());
        StackId(self.t.stacks.len() as u32 - 1)
    }
    fn mask(&mut self, cpus: &[u32]) -> MaskId {
        let mut m = CpuMask::default();
        for &c in cpus {
            m.insert(c);
        }
        self.t.cpumasks.push(m);
        MaskId(self.t.cpumasks.len() as u32 - 1)
    }
    fn done(mut self) -> Trace {
        self.t.finish();
        self.t
    }
}

fn q(target: u32, callsite: u64, func: u64, csd: u64) -> EventData {
    EventData::CsdQueue {
        cpu: Cpu(target),
        callsite: Sym::from_addr(callsite),
        func: Sym::from_addr(func),
        csd,
    }
}
fn entry(func: u64, csd: u64) -> EventData {
    EventData::CsdFunctionEntry {
        func: Sym::from_addr(func),
        csd,
    }
}
fn exit(func: u64, csd: u64) -> EventData {
    EventData::CsdFunctionExit {
        func: Sym::from_addr(func),
        csd,
    }
}
fn send(target: u32, callsite: u64, callback: u64) -> EventData {
    EventData::IpiSendCpu {
        cpu: Cpu(target),
        callsite: Sym::from_addr(callsite),
        callback: Sym::from_addr(callback),
    }
}

fn run(cpu_runs: &[&[(u64, Option<u64>, i32)]]) -> Timeline {
    let mut tl = Timeline::default();
    tl.cpus = cpu_runs
        .iter()
        .map(|runs| {
            runs.iter()
                .map(|&(ts, end, tid)| CpuRun {
                    ts: Ts(ts),
                    end: end.map(Ts),
                    tid: Tid(tid),
                })
                .collect()
        })
        .collect();
    tl
}

fn analyze_with(trace: &Trace, tl: &Timeline) -> Result<TlbReport, AnalysisError> {
    let opts = Options {
        top: 10,
        ..Options::default()
    };
    analyze(&Context {
        trace,
        timeline: tl,
        opts: &opts,
    })
}

/// The 4-CPU csd scenario described step by step in the comments.
fn csd_scenario() -> (Trace, Timeline) {
    let mut b = B::new();
    // Munmap stack: kernel part innermost first, then a user frame of pid
    // 100 (which is not alive here, so it stays unsymbolized).
    let s1 = b.stack(&[
        CTX_KERNEL,
        NFTM + 0x40,
        FTMR + 0x10,
        MUNMAP + 0x8,
        CTX_USER,
        0x7f00_0000_1234,
    ]);
    let s2 = b.stack(&[CTX_KERNEL, OECC + 0x20, FTMR + 0x10, MUNMAP + 0x8]);
    // Request 1: tid 100 on CPU 0 shoots down CPUs 1, 2, 3 (one IPI mask).
    b.ev(
        1000,
        0,
        100,
        "tlb:tlb_flush",
        EventData::TlbFlush {
            reason: 4,
            pages: 3,
        },
    );
    b.evs(
        1010,
        0,
        100,
        "csd:csd_queue_cpu",
        q(1, SCMC + 0x90, FLUSH, 0xc1),
        s1,
    );
    b.evs(
        1020,
        0,
        100,
        "csd:csd_queue_cpu",
        q(2, SCMC + 0x90, FLUSH, 0xc2),
        s1,
    );
    b.evs(
        1030,
        0,
        100,
        "csd:csd_queue_cpu",
        q(3, SCMC + 0x90, FLUSH, 0xc3),
        s1,
    );
    let m = b.mask(&[1, 2, 3]);
    b.ev(
        1040,
        0,
        100,
        "ipi:ipi_send_cpumask",
        EventData::IpiSendCpumask {
            mask: m,
            callsite: Sym::from_addr(SCMC + 0x90),
            callback: Sym::from_addr(FLUSH),
        },
    );
    // Request 2: tid 101 (same process) on CPU 1 shoots down CPU 0.
    b.evs(
        2000,
        1,
        101,
        "csd:csd_queue_cpu",
        q(0, OECC + 0x20, FLUSH, 0xd0),
        s2,
    );
    b.ev(
        2001,
        1,
        101,
        "ipi:ipi_send_cpu",
        send(0, OECC + 0x20, GENERIC),
    );
    b.ev(2500, 0, 100, "csd:csd_function_entry", entry(FLUSH, 0xd0)); // delivery 500
    b.ev(2600, 0, 100, "csd:csd_function_exit", exit(FLUSH, 0xd0)); // handler 100
    b.ev(3010, 1, 101, "csd:csd_function_entry", entry(FLUSH, 0xc1)); // delivery 2000
    b.ev(
        3510,
        1,
        101,
        "tlb:tlb_flush",
        EventData::TlbFlush {
            reason: 1,
            pages: 3,
        },
    );
    b.ev(4010, 1, 101, "csd:csd_function_exit", exit(FLUSH, 0xc1)); // handler 1000
    b.ev(5020, 2, 200, "csd:csd_function_entry", entry(FLUSH, 0xc2)); // delivery 4000
    b.ev(5520, 2, 200, "csd:csd_function_exit", exit(FLUSH, 0xc2)); // handler 500
                                                                    // CPU 3 never runs csd 0xc3: undelivered.
                                                                    // Request 3: remote wakeup from tid 200 on CPU 2 to CPU 1.
    b.ev(
        6000,
        2,
        200,
        "csd:csd_queue_cpu",
        q(1, WAKELIST + 0x11, TTWU, 0xe0),
    );
    b.ev(
        6001,
        2,
        200,
        "ipi:ipi_send_cpu",
        send(1, WAKELIST + 0x11, GENERIC),
    );
    b.ev(6300, 1, 101, "csd:csd_function_entry", entry(TTWU, 0xe0)); // delivery 300
    b.ev(6400, 1, 101, "csd:csd_function_exit", exit(TTWU, 0xe0)); // handler 100
                                                                   // Request 4: reschedule IPI (no callback) from CPU 0 to CPU 2.
    b.ev(7000, 0, 100, "ipi:ipi_send_cpu", send(2, RESCHED + 0x5, 0));
    // A generic IPI without a traced queue: unmatched.
    b.ev(
        8000,
        3,
        300,
        "ipi:ipi_send_cpu",
        send(0, OECC + 0x20, GENERIC),
    );
    b.ev(
        8000,
        3,
        300,
        "irq_vectors:call_function_single_entry",
        EventData::IrqVector {
            vector: 251,
            entry: true,
        },
    );
    let trace = b.done();
    // CPU 0 runs tid 100; CPU 1 idles until 1500 then runs 101; CPU 2 runs
    // 200; CPU 3 has no switch before 9000.
    let tl = run(&[
        &[(0, None, 100)],
        &[(0, Some(1500), 0), (1500, None, 101)],
        &[(0, None, 200)],
        &[(9000, None, 300)],
    ]);
    (trace, tl)
}

#[test]
fn csd_trace_counts_classes_latencies_and_targets() {
    let (trace, tl) = csd_scenario();
    let r = analyze_with(&trace, &tl).unwrap();
    assert_eq!(r.source, "csd:csd_queue_cpu");
    assert_eq!(r.shootdowns, 2);
    assert_eq!(r.duration_ns, 7000);
    assert!((r.shootdowns_per_second - 2.0 / 7e-6).abs() < 1e-3);
    assert_eq!(r.targets_hist, BTreeMap::from([(1, 1), (3, 1)]));
    // Request 1: CPU1 idle, CPU2 other process, CPU3 unknown; request 2:
    // CPU0 runs tid 100, same process as sender 101.
    assert_eq!(
        r.targets_at_send,
        TargetStates {
            idle: 1,
            same_process: 1,
            other_process: 1,
            running_unknown_process: 0,
            unknown: 1
        }
    );
    let classes: Vec<IpiClass> = r.ipi_classes.iter().map(|c| c.class).collect();
    assert_eq!(
        classes,
        vec![
            IpiClass::TlbShootdown,
            IpiClass::RemoteWakeup,
            IpiClass::Reschedule
        ]
    );
    let tlb = &r.ipi_classes[0];
    assert_eq!((tlb.count, tlb.targets, tlb.ipis_sent), (2, 4, 2));
    let d = tlb.delivery.as_ref().unwrap();
    assert_eq!(
        (d.count, d.p50_ns, d.max_ns, d.mean_ns),
        (3, 2000, 4000, 2166)
    );
    let h = tlb.handler.as_ref().unwrap();
    assert_eq!((h.count, h.p50_ns, h.max_ns), (3, 500, 1000));
    assert_eq!(d.hist.iter().map(|b| b.count).sum::<u64>(), 3);
    // 500 ns in [0,1us), 2000 in [2us,4us), 4000 in [4us,8us).
    let bucket = |lo: u64| d.hist.iter().find(|b| b.lo_ns == lo).map(|b| b.count);
    assert_eq!(
        (bucket(0), bucket(2000), bucket(4000)),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(tlb.senders.len(), 1);
    assert_eq!((tlb.senders[0].pid, tlb.senders[0].count), (100, 2));
    assert_eq!(tlb.senders[0].threads.len(), 2);

    let wake = &r.ipi_classes[1];
    assert_eq!((wake.count, wake.ipis_sent), (1, 1));
    assert_eq!(wake.delivery.as_ref().unwrap().max_ns, 300);
    assert_eq!(wake.handler.as_ref().unwrap().max_ns, 100);
    assert_eq!(wake.targets_at_send.other_process, 1);
    assert_eq!(r.ipi_classes[2].count, 1);

    assert_eq!(r.undelivered, 1);
    assert_eq!(r.unmatched_ipis, 1);
    assert_eq!(
        r.irq_vectors,
        BTreeMap::from([("irq_vectors:call_function_single_entry".to_string(), 1)])
    );
    let send = &r.tlb_flush_by_reason["remote IPI send"];
    assert_eq!(send.count, 1);
    assert_eq!(send.pages_hist, BTreeMap::from([("2-3".to_string(), 1)]));
    let recv = &r.tlb_flush_by_reason["remote shootdown"];
    assert_eq!(recv.by_cpu, vec![0, 1]);

    // Hotspots: 4 requests, each callsite pair once.
    assert_eq!(r.top_callsites.len(), 4);
    assert!(r
        .top_callsites
        .iter()
        .all(|c| (c.share - 0.25).abs() < 1e-9));
    assert!(r
        .top_callsites
        .iter()
        .any(|c| c.callsite == "smp_call_function_many_cond"
            && c.callback == "flush_tlb_func"
            && c.class == IpiClass::TlbShootdown));
    assert!(r.top_callsites.iter().any(|c| c.callsite == "resched_curr"
        && c.callback == NO_CALLBACK
        && c.class == IpiClass::Reschedule));
    assert_eq!(r.top_stacks.len(), 2);
    let s1 = r
        .top_stacks
        .iter()
        .find(|s| s.frames[0] == "native_flush_tlb_multi")
        .unwrap();
    assert_eq!(
        &s1.frames[..3],
        &[
            "native_flush_tlb_multi",
            "flush_tlb_mm_range",
            "__x64_sys_munmap"
        ]
    );
    assert_eq!(s1.frames.len(), 4);
    assert!(
        s1.frames[3].starts_with("[unsymbolized user frames: "),
        "{:?}",
        s1.frames
    );
    assert_eq!(s1.callback, "flush_tlb_func");
    assert_eq!(r.senders[0].comm, "ebizzy");
    assert!(r.symbols.unsymbolized >= 1);
    assert_eq!(r.symbols.kernel_source, "trace kallsyms");

    // JSON keys of the public contract.
    let j = serde_json::to_value(&r).unwrap();
    for k in [
        "shootdowns",
        "shootdowns_per_second",
        "targets_hist",
        "ipi_classes",
        "top_callsites",
        "top_stacks",
        "senders",
        "tlb_flush_by_reason",
    ] {
        assert!(j.get(k).is_some(), "missing key {k}");
    }
    for k in ["callsite", "callback", "count", "share"] {
        assert!(j["top_callsites"][0].get(k).is_some(), "{k}");
    }
    assert!(j["top_stacks"][0]["frames"].is_array());
}

#[test]
fn cpumask_path_without_csd_events() {
    // A large machine recorded with `perf record -e ipi:ipi_send_cpumask,tlb:tlb_flush`.
    let mut b = B::new();
    let m1 = b.mask(&[1, 2, 5, 70]);
    let m2 = b.mask(&[3]);
    let cm = |mask, cb| EventData::IpiSendCpumask {
        mask,
        callsite: Sym::from_addr(SCMC + 0x90),
        callback: Sym::from_addr(cb),
    };
    b.ev(100, 0, 100, "ipi:ipi_send_cpumask", cm(m1, FLUSH));
    b.ev(200, 0, 100, "ipi:ipi_send_cpumask", cm(m2, FLUSH));
    b.ev(300, 4, 200, "ipi:ipi_send_cpumask", cm(m2, TTWU));
    b.ev(
        1100,
        1,
        0,
        "tlb:tlb_flush",
        EventData::TlbFlush {
            reason: 1,
            pages: -1,
        },
    );
    let trace = b.done();
    let r = analyze_with(&trace, &Timeline::default()).unwrap();
    assert_eq!(r.source, "ipi:ipi_send_cpu/ipi_send_cpumask");
    assert_eq!(r.shootdowns, 2);
    assert_eq!(r.targets_hist, BTreeMap::from([(1, 1), (4, 1)]));
    assert_eq!(r.targets_at_send.unknown, 5);
    assert_eq!(r.ipi_classes[1].class, IpiClass::RemoteWakeup);
    assert_eq!(r.tlb_flush_by_reason["remote shootdown"].full_flushes, 1);
    assert!(r.ipi_classes[0].delivery.is_none());
    assert!(r.notes.iter().any(|n| n.contains("timeline")));
}

#[test]
fn tlb_flush_only_trace_counts_remote_ipi_sends() {
    let mut b = B::new();
    for (i, pages) in [1i64, 2, -1].into_iter().enumerate() {
        b.ev(
            1000 * i as u64,
            0,
            100,
            "tlb:tlb_flush",
            EventData::TlbFlush { reason: 4, pages },
        );
    }
    b.ev(
        5000,
        1,
        0,
        "tlb:tlb_flush",
        EventData::TlbFlush {
            reason: 0,
            pages: -1,
        },
    );
    let trace = b.done();
    let r = analyze_with(&trace, &Timeline::default()).unwrap();
    assert_eq!(r.shootdowns, 3);
    assert_eq!(r.source, "tlb:tlb_flush remote IPI send");
    assert!(r.notes[0].contains("csd:csd_queue_cpu"));
    assert_eq!(
        r.tlb_flush_by_reason["remote IPI send"].pages_hist,
        BTreeMap::from([
            ("1".to_string(), 1),
            ("2-3".to_string(), 1),
            ("full".to_string(), 1)
        ])
    );
}

#[test]
fn trace_without_ipi_events_names_what_is_missing() {
    let mut b = B::new();
    b.ev(1, 0, 1, "sched:sched_switch", EventData::Other(None));
    let trace = b.done();
    let e = analyze_with(&trace, &Timeline::default()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("csd:csd_queue_cpu") && msg.contains("ipi:ipi_send_cpumask"));
    assert!(
        msg.contains("perf record -a -e csd:csd_queue_cpu,"),
        "{msg}"
    );
}

#[test]
fn text_trace_names_classify_without_addresses() {
    let mut t = Trace::new("txt", TraceFormat::FtraceText);
    let name = t.intern_name("csd:csd_queue_cpu");
    let cs = Sym::from_name(t.strings.intern("smp_call_function_many_cond+0x1a0"));
    let f = Sym::from_name(t.strings.intern("flush_tlb_func"));
    let nohz = Sym::from_name(t.strings.intern("nohz_csd_func"));
    t.events_by_name.insert("csd:csd_queue_cpu".into(), 2);
    for (ts, func) in [(10, f), (20, nohz)] {
        t.events.push(Event {
            ts: Ts(ts),
            cpu: Cpu(0),
            tid: Tid(5),
            name,
            stack: StackId::NONE,
            data: EventData::CsdQueue {
                cpu: Cpu(1),
                callsite: cs,
                func,
                csd: ts,
            },
        });
    }
    t.finish();
    let r = analyze_with(&t, &Timeline::default()).unwrap();
    assert_eq!(r.shootdowns, 1);
    assert_eq!(r.ipi_classes[1].class, IpiClass::IdleBalanceKick);
    assert_eq!(r.top_callsites[0].callsite, "smp_call_function_many_cond");
}

#[test]
fn classes_and_buckets() {
    assert_eq!(
        IpiClass::of_function(Some("flush_tlb_func")),
        IpiClass::TlbShootdown
    );
    assert_eq!(
        IpiClass::of_function(Some("flush_tlb_func_remote")),
        IpiClass::TlbShootdown
    );
    assert_eq!(IpiClass::of_function(None), IpiClass::Reschedule);
    assert_eq!(IpiClass::of_function(Some("irq_work_run")), IpiClass::Other);
    assert_eq!(pages_bucket(0), "0");
    assert_eq!(pages_bucket(7), "4-7");
    assert_eq!(pages_bucket(8), "8-15");
    assert_eq!(flush_reason_name(5), "remote wrong CPU");
}

#[test]
fn profile_top_callers_counts_self_and_total() {
    let mut b = B::new();
    // 3 samples in native_flush_tlb_multi (called from flush_tlb_mm_range),
    // 1 in resched_curr, 1 with no ip.
    let s_flush = b.stack(&[CTX_KERNEL, NFTM + 4, FTMR + 8, MUNMAP]);
    let s_res = b.stack(&[CTX_KERNEL, RESCHED + 1]);
    for i in 0..3 {
        b.evs(10 + i, 0, 100, "cpu-clock", EventData::Other(None), s_flush);
    }
    b.evs(20, 1, 200, "cpu-clock", EventData::Other(None), s_res);
    b.ev(30, 1, 200, "cpu-clock", EventData::Other(None));
    let trace = b.done();
    let opts = Options::default();
    let tl = Timeline::default();
    let ctx = Context {
        trace: &trace,
        timeline: &tl,
        opts: &opts,
    };
    let p = analyze_profile(&ctx).unwrap();
    assert_eq!(p.samples, 5);
    assert_eq!(p.kernel_samples, 4);
    assert_eq!(p.flush_samples, 3);
    assert_eq!(p.top[0].symbol, "native_flush_tlb_multi");
    assert_eq!((p.top[0].samples, p.top[0].total_samples), (3, 3));
    assert!(p.top[0].flush);
    assert!((p.top[0].share - 0.6).abs() < 1e-9);
    assert_eq!(p.top[0].module, "[kernel.kallsyms]");
    let res = p.top.iter().find(|r| r.symbol == "resched_curr").unwrap();
    assert!(!res.flush);
    assert_eq!(p.event, "cpu-clock");
    let j = serde_json::to_value(&p).unwrap();
    assert!(j["top"][0].get("module").is_some() && j.get("samples").is_some());
    // Without samples there is no profile.
    let (trace, tl) = csd_scenario();
    let ctx = Context {
        trace: &trace,
        timeline: &tl,
        opts: &opts,
    };
    assert!(analyze_profile(&ctx).is_none());
}

#[test]
fn context_marker_constant_matches_perf() {
    assert_eq!(PERF_CONTEXT_MAX, u64::MAX - 4094);
}

/// The section and the profile computed from the events pushed in slices
/// of every [`SLICINGS`] size, to a trace without events, are those of
/// the whole trace; returns the number of requests found.
fn check_slices(name: &str, mut trace: Trace, tl: &Timeline) -> usize {
    let opts = Options {
        top: 10,
        ..Options::default()
    };
    let ctx = Context {
        trace: &trace,
        timeline: tl,
        opts: &opts,
    };
    let scan = prepare(&ctx).ok().map(|p| format!("{:?}", p.scan));
    let whole = format!("{:?}", analyze(&ctx));
    let requests = scan.as_ref().map_or(0, |_| requests(&ctx).unwrap().len());
    let profile = analyze_profile(&ctx);
    let leaves = profile::leaf_samples(&ctx);
    let events = take_events(&mut trace);
    let ctx = Context {
        trace: &trace,
        timeline: tl,
        opts: &opts,
    };
    for sizes in SLICINGS {
        match TlbPass::new(&ctx) {
            Ok(mut pass) => {
                push_in(&events, sizes, |s| pass.push(s));
                let p = pass.finish();
                assert_eq!(Some(format!("{:?}", p.scan)), scan, "{name} {sizes:?}");
                let r = format!("{:?}", finish(&ctx, p));
                assert_eq!(r, whole, "{name} {sizes:?}");
            }
            Err(e) => {
                assert!(scan.is_none(), "{name}");
                assert_eq!(format!("{:?}", Err::<TlbReport, _>(e)), whole, "{name}");
            }
        }
        let mut pass = ProfilePass::new(&ctx);
        push_in(&events, sizes, |s| pass.push(s));
        assert_eq!(pass.finish(), profile, "{name} {sizes:?}");
        let mut pass = ProfilePass::new(&ctx);
        push_in(&events, sizes, |s| pass.push(s));
        assert_eq!(pass.leaf_samples(), leaves, "{name} {sizes:?}");
    }
    requests
}

#[test]
fn pushed_in_slices_is_one_push() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    for name in [
        "tlb/tracefs-tlb.txt",
        "ftrace/tracefs-ipi-tgid.txt",
        "perf/callchain.data",
        "perf/sched_small.data",
        "sim/mixed-s1.data",
    ] {
        let trace =
            schedscope_parser::load(&root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let tl = Timeline::build(&trace);
        let requests = check_slices(name, trace, &tl);
        if name.starts_with("tlb/") || name.starts_with("perf/callchain") {
            assert!(requests > 20, "{name}: {requests} requests");
        }
    }
    let (trace, tl) = csd_scenario();
    assert!(check_slices("csd scenario", trace, &tl) > 0);
    // A csd group closed by another event of its CPU, and one left open
    // across an event of another CPU: three requests, however the events
    // are sliced (the pass remembers across slices that csd events came).
    let (rt, other) = ("sched:sched_stat_runtime", EventData::Other(None));
    let mut b = B::new();
    b.ev(10, 0, 100, "csd:csd_queue_cpu", q(1, SCMC, FLUSH, 0xa));
    b.ev(11, 0, 100, rt, other);
    b.ev(12, 0, 100, "csd:csd_queue_cpu", q(2, SCMC, FLUSH, 0xb));
    b.ev(13, 1, 200, rt, other);
    b.ev(14, 0, 100, "csd:csd_queue_cpu", q(3, SCMC, FLUSH, 0xc));
    b.ev(15, 2, 200, rt, other);
    b.ev(16, 0, 100, rt, other);
    b.ev(17, 0, 100, "csd:csd_queue_cpu", q(1, SCMC, FLUSH, 0xd));
    b.ev(18, 1, 0, "csd:csd_function_entry", entry(FLUSH, 0xa));
    b.ev(19, 1, 0, "csd:csd_function_exit", exit(FLUSH, 0xa));
    let trace = b.done();
    let tl = Timeline::build(&trace);
    assert_eq!(check_slices("interrupted group", trace, &tl), 3);
}

#[test]
fn profile_pushed_in_slices_is_one_push() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let trace = schedscope_parser::load(&root.join("perf/callchain.data")).unwrap();
    let opts = Options::default();
    let tl = Timeline::default();
    let ctx = Context {
        trace: &trace,
        timeline: &tl,
        opts: &opts,
    };
    let p = analyze_profile(&ctx).expect("cpu-clock samples");
    assert!(p.samples > 10 && p.top.len() > 1, "{p:?}");
    // (the slices themselves: `pushed_in_slices_is_one_push`)
}
