//! Benchmarks of the tlb analysis and of symbolization (divan).
//!
//!     cargo bench -p schedscope-analysis --bench tlb
//!     SCHEDSCOPE_BENCH_FILE=ipi.data cargo bench -p schedscope-analysis --bench tlb
//!
//! The default input is a generated trace (deterministic) of 300k IPI
//! requests on 8 CPUs: per request a tlb_flush, csd_queue_cpu,
//! ipi_send_cpu, csd_function_entry and csd_function_exit; each queue
//! carries one of 5,000 distinct 12-frame kernel call chains, resolved
//! against a 100k-symbol kallsyms table, so that symbolization of about
//! 60k distinct addresses (each once, in parallel) and the pass over 1.5M
//! events are both measured. With `SCHEDSCOPE_BENCH_FILE` a recorded trace
//! is loaded once instead.

use schedscope_analysis::{tlb, Context, Options, Timeline};
use schedscope_trace::symbols::{chain_locations, SymbolTable};
use schedscope_trace::{
    Cpu, Event, EventData, KernelSymbols, StackId, Sym, Tid, Trace, TraceFormat, Ts,
};
use std::sync::OnceLock;

fn main() {
    // (symbols from the host too, as the binary installs them)
    schedscope_symbolize::install();
    divan::main();
}

const KBASE: u64 = 0xffff_ffff_8100_0000;

fn synthetic(requests: usize) -> Trace {
    const CPUS: u32 = 8;
    let mut t = Trace::new("synthetic-ipi", TraceFormat::PerfData);
    t.kernel_symbols = KernelSymbols {
        syms: (0..100_000u64)
            .map(|i| (KBASE + i * 0x100, format!("kfunc_{i}")))
            .collect(),
    };
    let flush = KBASE + 0x100 * 7;
    let ttwu = KBASE + 0x100 * 9;
    let generic = KBASE + 0x100 * 11;
    let q = t.intern_name("csd:csd_queue_cpu");
    let send = t.intern_name("ipi:ipi_send_cpu");
    let entry = t.intern_name("csd:csd_function_entry");
    let exit = t.intern_name("csd:csd_function_exit");
    let tlbf = t.intern_name("tlb:tlb_flush");
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..5_000 {
        let st: Vec<u64> = (0..12)
            .map(|_| KBASE + (next() % 100_000) * 0x100 + next() % 0x100)
            .collect();
        t.stacks.push(st);
    }
    let mut ts = 1_000_000u64;
    let push = |t: &mut Trace, ts, cpu, tid, name, stack, data| {
        t.events.push(Event {
            ts: Ts(ts),
            cpu: Cpu(cpu),
            tid: Tid(tid),
            name,
            stack,
            data,
        })
    };
    for i in 0..requests {
        ts += next() % 5000 + 1;
        let cpu = (next() % CPUS as u64) as u32;
        let target = (cpu + 1 + (next() % (CPUS as u64 - 1)) as u32) % CPUS;
        let tid = 100 + (next() % 64) as i32;
        let func = if i % 4 == 0 { ttwu } else { flush };
        let csd = 0xffff_8880_0000_0000 + target as u64 * 64;
        let stack = StackId((next() % 5_000) as u32);
        let callsite = Sym::from_addr(KBASE + 0x100 * 13 + 0x20);
        push(
            &mut t,
            ts,
            cpu,
            tid,
            tlbf,
            StackId::NONE,
            EventData::TlbFlush {
                reason: 4,
                pages: 1,
            },
        );
        push(
            &mut t,
            ts + 1,
            cpu,
            tid,
            q,
            stack,
            EventData::CsdQueue {
                cpu: Cpu(target),
                callsite,
                func: Sym::from_addr(func),
                csd,
            },
        );
        push(
            &mut t,
            ts + 2,
            cpu,
            tid,
            send,
            StackId::NONE,
            EventData::IpiSendCpu {
                cpu: Cpu(target),
                callsite,
                callback: Sym::from_addr(generic),
            },
        );
        let d = next() % 3000 + 100;
        push(
            &mut t,
            ts + d,
            target,
            0,
            entry,
            StackId::NONE,
            EventData::CsdFunctionEntry {
                func: Sym::from_addr(func),
                csd,
            },
        );
        push(
            &mut t,
            ts + d + 500,
            target,
            0,
            exit,
            StackId::NONE,
            EventData::CsdFunctionExit {
                func: Sym::from_addr(func),
                csd,
            },
        );
    }
    t.events_by_name
        .insert("csd:csd_queue_cpu".into(), requests as u64);
    t.finish();
    t
}

fn trace() -> &'static Trace {
    static T: OnceLock<Trace> = OnceLock::new();
    T.get_or_init(|| match std::env::var_os("SCHEDSCOPE_BENCH_FILE") {
        Some(p) => schedscope_parser::load(std::path::Path::new(&p))
            .unwrap_or_else(|e| panic!("SCHEDSCOPE_BENCH_FILE: {e}")),
        None => synthetic(300_000),
    })
}

fn timeline() -> &'static Timeline {
    static T: OnceLock<Timeline> = OnceLock::new();
    T.get_or_init(|| Timeline::build(trace()))
}

/// The whole tlb section (pass, symbolization, classes, hotspots).
#[divan::bench(sample_count = 5)]
fn analyze() -> tlb::TlbReport {
    let opts = Options {
        top: 10,
        ..Options::default()
    };
    let ctx = Context {
        trace: trace(),
        timeline: timeline(),
        opts: &opts,
    };
    tlb::analyze(&ctx).unwrap_or_default()
}

/// Symbolization alone: every call-chain frame of the trace, duplicates
/// included (the table resolves each distinct location once).
#[divan::bench(sample_count = 5)]
fn symbolize_all_frames() -> usize {
    let t = trace();
    let locs = t.stacks.iter().flat_map(|s| chain_locations(s, None));
    SymbolTable::build(t, locs).len()
}

/// Reference for the tlb pass: the cheapest pass over every event (count
/// one kind). With no per-kind index in the trace, the pass cannot be
/// faster than this.
#[divan::bench(sample_count = 20)]
fn events_pass_floor() -> usize {
    trace()
        .events
        .iter()
        .filter(|e| matches!(e.data, EventData::TlbFlush { .. }))
        .count()
}
