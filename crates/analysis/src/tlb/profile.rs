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
use schedscope_trace::{Event, EventData, Sym, Tid, Trace};
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
fn sample_frames(trace: &Trace, e: &Event, pid: Option<Tid>) -> Vec<Location> {
    if let Some(st) = trace.stack(e.stack) {
        let f = chain_locations(st, pid);
        if !f.is_empty() {
            return f;
        }
    }
    if let EventData::Other(Some(i)) = e.data {
        if let Some(v) = trace.raw_args.value(i, "ip") {
            let v = v.trim_start_matches("0x");
            if let Ok(a) = u64::from_str_radix(v, 16) {
                return vec![Location::in_process(pid, Sym::from_addr(a))];
            }
        }
    }
    Vec::new()
}

/// The profile fed the events in slices: [`ProfilePass::push`] takes the
/// events in time order (any number of consecutive slices) and keeps a
/// copy of each profile sample; [`ProfilePass::finish`] builds the
/// profile. Only `push` reads events: the trace (names, stacks, tasks,
/// raw arguments) may have none; the timeline is not read.
pub struct ProfilePass<'a> {
    trace: &'a Trace,
    /// Per event name id: a profile sample event.
    is_sample: Vec<bool>,
    /// Some name is a profile sample event.
    any: bool,
    /// The samples pushed so far.
    samples: Vec<Event>,
}

impl<'a> ProfilePass<'a> {
    /// Start the pass (reads the trace's event names).
    pub fn new(ctx: &Context<'a>) -> ProfilePass<'a> {
        let trace = ctx.trace;
        let is_sample: Vec<bool> = trace
            .event_names
            .iter()
            .map(|n| is_profile_event(n))
            .collect();
        ProfilePass {
            trace,
            any: is_sample.contains(&true),
            is_sample,
            samples: Vec::new(),
        }
    }

    /// The next events, in time order after those pushed before.
    pub fn push(&mut self, events: &[Event]) {
        if !self.any {
            return;
        }
        let is_sample = &self.is_sample;
        self.samples.extend(events.iter().filter(|e| {
            is_sample.get(e.name.0 as usize) == Some(&true) && matches!(e.data, EventData::Other(_))
        }));
    }

    /// Each sample's time and frames (leaf first), in trace order.
    fn frames(&self) -> Vec<(u64, Vec<Location>)> {
        let trace = self.trace;
        let pid_of = |tid: Tid| trace.tasks.tgid(tid).filter(|p| p.0 > 0).or(Some(tid));
        self.samples
            .iter()
            .map(|e| (e.ts.0, sample_frames(trace, e, pid_of(e.tid))))
            .collect()
    }

    /// What [`leaf_samples`] returns, from the samples pushed.
    pub fn leaf_samples(self) -> Vec<(u64, (String, String))> {
        if !self.any {
            return Vec::new();
        }
        let samples = self.frames();
        let syms = SymbolTable::build(self.trace, samples.iter().flat_map(|s| s.1.iter().copied()));
        samples
            .iter()
            .map(|(ts, f)| {
                let key = f.first().map_or_else(no_ip_key, |&l| row_key(&syms.get(l)));
                (*ts, key)
            })
            .collect()
    }

    /// What [`analyze_profile`] returns, from the samples pushed.
    pub fn finish(self) -> Option<ProfileReport> {
        if !self.any {
            return None;
        }
        let trace = self.trace;
        let mut names: Vec<&str> = trace
            .event_names
            .iter()
            .zip(&self.is_sample)
            .filter(|(_, &s)| s)
            .map(|(n, _)| n.as_str())
            .collect();
        names.sort_unstable();
        let samples: Vec<Vec<Location>> = self.frames().into_iter().map(|s| s.1).collect();
        profile(trace, &names, &samples)
    }
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
    let mut pass = ProfilePass::new(ctx);
    pass.push(&ctx.trace.events);
    pass.leaf_samples()
}

/// Build the profile; `None` when the trace has no cpu-clock samples.
pub fn analyze_profile(ctx: &Context) -> Option<ProfileReport> {
    let mut pass = ProfilePass::new(ctx);
    pass.push(&ctx.trace.events);
    pass.finish()
}

/// The profile of the samples' frames; `names`: the sample event names,
/// sorted.
fn profile(trace: &Trace, names: &[&str], samples: &[Vec<Location>]) -> Option<ProfileReport> {
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
    for f in samples {
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
