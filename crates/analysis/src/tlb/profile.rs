//! The cpu-clock "top callers" profile (`schedscope record --profile HZ`).
//!
//! Each sample is an [`EventData::Other`] event whose name contains
//! `cpu-clock` (or `task-clock`), with a call chain whose first frame is the
//! sampled instruction pointer (a kept `ip` field is used when there is no
//! chain). The table counts samples per leaf symbol ("self", as the
//! oprofile listing of the seed) and, separately, samples whose stack
//! contains the symbol at all ("total"), so that time spent under
//! `native_flush_tlb_multi` shows even when the leaf is a helper it called.

use super::FLUSH_FUNCTIONS;
use crate::Context;
use schedscope_trace::symbols::{chain_locations, Location, Resolved, SymbolTable};
use schedscope_trace::{Event, EventData, Sym, Tid};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Rows kept in JSON.
const JSON_ROWS: usize = 100;

/// One symbol of the profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileRow {
    /// Function name (or `[unsymbolized 0x...]`).
    pub symbol: String,
    /// `[kernel.kallsyms]`, the ELF path, or `[unknown]`.
    pub module: String,
    /// Samples whose leaf frame is in this symbol.
    pub samples: u64,
    /// `samples` / all samples.
    pub share: f64,
    /// Samples whose stack contains this symbol anywhere.
    pub total_samples: u64,
    /// A TLB-flush function (native_flush_tlb_multi, flush_tlb_mm_range, ...).
    pub flush: bool,
}

/// The `profile` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProfileReport {
    /// Sample event name(s), e.g. `cpu-clock`.
    pub event: String,
    /// Samples.
    pub samples: u64,
    /// Samples in kernel code.
    pub kernel_samples: u64,
    /// Samples in user code.
    pub user_samples: u64,
    /// Samples whose leaf could not be symbolized.
    pub unsymbolized_samples: u64,
    /// Samples with a flush function anywhere in the stack.
    pub flush_samples: u64,
    /// Top symbols by self samples.
    pub top: Vec<ProfileRow>,
}

/// Whether `name` is a profile sample event: `cpu-clock` or `task-clock`
/// with any perf modifiers (`cpu-clock:u`, `cpu-clock/period=2000000/`). The
/// same rule as the `cpu-clock*` / `task-clock*` patterns with which
/// `report` keeps these events when it loads only what its sections read.
pub fn is_profile_event(name: &str) -> bool {
    name.starts_with("cpu-clock") || name.starts_with("task-clock")
}

/// Whether `sym` is one of the highlighted flush functions.
pub fn is_flush_function(sym: &str) -> bool {
    FLUSH_FUNCTIONS.contains(&sym)
}

/// The sample's frames (leaf first): call chain, else a kept `ip` field.
fn sample_frames(ctx: &Context, e: &Event, pid: Option<Tid>) -> Vec<Location> {
    if let Some(st) = ctx.trace.stack(e.stack) {
        let f = chain_locations(st, pid);
        if !f.is_empty() {
            return f;
        }
    }
    if let EventData::Other(Some(i)) = e.data {
        if let Some(v) = ctx.trace.raw_args.value(i, "ip") {
            let v = v.trim_start_matches("0x");
            if let Ok(a) = u64::from_str_radix(v, 16) {
                return vec![Location::in_process(pid, Sym::from_addr(a))];
            }
        }
    }
    Vec::new()
}

/// Event ids of the profile's sample events.
fn profile_ids(trace: &schedscope_trace::Trace) -> HashSet<u16> {
    trace
        .event_names
        .iter()
        .enumerate()
        .filter(|(_, n)| is_profile_event(n))
        .map(|(i, _)| i as u16)
        .collect()
}

/// Every profile sample: its event and its frames (leaf first).
fn samples<'t>(ctx: &Context<'t>, ids: &HashSet<u16>) -> Vec<(&'t Event, Vec<Location>)> {
    let trace = ctx.trace;
    let pid_of = |tid: Tid| trace.tasks.tgid(tid).filter(|p| p.0 > 0).or(Some(tid));
    trace
        .events
        .iter()
        .filter(|e| ids.contains(&e.name.0) && matches!(e.data, EventData::Other(_)))
        .map(|e| (e, sample_frames(ctx, e, pid_of(e.tid))))
        .collect()
}

/// The row key `(symbol, module)` of a frame, as [`ProfileRow`] names it.
fn row_key(r: &Resolved) -> (String, String) {
    let module = if r.is_symbolized() || r.module != "[unknown]" {
        r.module.clone()
    } else {
        "[unknown]".to_string()
    };
    // Unsymbolized user addresses are grouped per module, not per address.
    let sym = if r.is_symbolized() {
        r.function()
    } else {
        format!("[unsymbolized: {}]", r.reason)
    };
    (sym, module)
}

/// The row key of a sample without frames.
fn no_ip_key() -> (String, String) {
    ("[no ip]".to_string(), "[unknown]".to_string())
}

/// Each sample's time (ns) and the `(symbol, module)` of the
/// [`ProfileReport::top`] row its leaf frame counts in, in trace order
/// (for front ends that show where a symbol's samples fall).
pub fn leaf_samples(ctx: &Context) -> Vec<(u64, (String, String))> {
    let ids = profile_ids(ctx.trace);
    if ids.is_empty() {
        return Vec::new();
    }
    let samples = samples(ctx, &ids);
    let syms = SymbolTable::build(ctx.trace, samples.iter().flat_map(|s| s.1.iter().copied()));
    samples
        .iter()
        .map(|(e, f)| {
            let key = f.first().map_or_else(no_ip_key, |&l| row_key(&syms.get(l)));
            (e.ts.0, key)
        })
        .collect()
}

/// Build the profile; `None` when the trace has no cpu-clock samples.
pub fn analyze_profile(ctx: &Context) -> Option<ProfileReport> {
    let trace = ctx.trace;
    let ids = profile_ids(trace);
    if ids.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = ids
        .iter()
        .map(|&i| trace.event_names[i as usize].as_str())
        .collect();
    names.sort_unstable();
    let samples: Vec<Vec<Location>> = samples(ctx, &ids).into_iter().map(|s| s.1).collect();
    if samples.is_empty() {
        return None;
    }
    let syms = SymbolTable::build(trace, samples.iter().flatten().copied());
    let n = samples.len() as u64;
    let mut rep = ProfileReport {
        event: names.join(","),
        samples: n,
        ..ProfileReport::default()
    };
    // (symbol, module) -> (self, total)
    let mut acc: HashMap<(String, String), (u64, u64)> = HashMap::new();
    for f in &samples {
        let resolved: Vec<_> = f.iter().map(|&l| syms.get(l)).collect();
        let Some(leaf) = resolved.first() else {
            rep.unsymbolized_samples += 1;
            let e = acc.entry(no_ip_key()).or_default();
            e.0 += 1;
            e.1 += 1;
            continue;
        };
        if f.first().is_some_and(|l| !l.user) {
            rep.kernel_samples += 1;
        } else {
            rep.user_samples += 1;
        }
        if !leaf.is_symbolized() {
            rep.unsymbolized_samples += 1;
        }
        acc.entry(row_key(leaf)).or_default().0 += 1;
        let mut seen: HashSet<(String, String)> = HashSet::new();
        let mut flush = false;
        for r in &resolved {
            let k = row_key(r);
            flush |= is_flush_function(&k.0);
            if seen.insert(k.clone()) {
                acc.entry(k).or_default().1 += 1;
            }
        }
        if flush {
            rep.flush_samples += 1;
        }
    }
    let mut top: Vec<ProfileRow> = acc
        .into_iter()
        .filter(|(_, (s, _))| *s > 0)
        .map(|((symbol, module), (s, t))| ProfileRow {
            flush: is_flush_function(&symbol),
            symbol,
            module,
            samples: s,
            share: s as f64 / n as f64,
            total_samples: t,
        })
        .collect();
    top.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.symbol.cmp(&b.symbol))
    });
    top.truncate(JSON_ROWS);
    rep.top = top;
    Some(rep)
}
