//! The hotspots: top (callsite, function) pairs and top call stacks,
//! counted by raw keys first, then each distinct key named once.

use super::finish::Classified;
use super::prepare::callback_name;
use super::report::{Callsite, IpiClass, StackRow};
use super::JSON_ROWS;
use schedscope_trace::hash::FxMap;
use schedscope_trace::symbols::{chain_locations, Location, SymbolTable};
use schedscope_trace::{StackId, Sym, Tid, Trace};
use std::collections::HashMap;

/// The top callsites and top stacks (counted by raw keys first, then each
/// distinct key named once: different addresses in one function merge),
/// and how many requests had a stack.
pub(super) fn hotspots(
    trace: &Trace,
    syms: &SymbolTable,
    classified: &[Classified],
    req_stack_pid: &[Option<Tid>],
) -> (Vec<Callsite>, Vec<StackRow>, u64) {
    let total = classified.len() as u64;
    let mut by_site_raw: FxMap<(Sym, Sym, IpiClass), u64> = FxMap::default();
    let mut by_stack_raw: FxMap<(StackId, Option<Tid>, Sym, IpiClass), u64> = FxMap::default();
    for &(class, r, i) in classified {
        *by_site_raw.entry((r.callsite, r.func, class)).or_default() += 1;
        if r.stack.is_some() {
            *by_stack_raw
                .entry((r.stack, req_stack_pid[i], r.func, class))
                .or_default() += 1;
        }
    }
    let mut by_site: HashMap<(String, String, IpiClass), u64> = HashMap::new();
    for ((cs, f, class), n) in by_site_raw {
        let key = (
            syms.name(Location::kernel(cs)),
            callback_name(syms, f),
            class,
        );
        *by_site.entry(key).or_default() += n;
    }
    let mut by_stack: HashMap<(Vec<String>, String, IpiClass), u64> = HashMap::new();
    let mut with_stack = 0u64;
    for ((id, pid, f, class), n) in by_stack_raw {
        let Some(st) = trace.stack(id) else { continue };
        let mut fr: Vec<String> = chain_locations(st, pid)
            .into_iter()
            .map(|l| match syms.resolved(l) {
                // Group stacks whose user part cannot be named.
                Some(r) if l.user && !r.is_symbolized() => {
                    format!("[unsymbolized user frames: {}]", r.reason)
                }
                Some(r) => r.function(),
                None => syms.name(l),
            })
            .collect();
        fr.dedup();
        if !fr.is_empty() {
            with_stack += n;
            *by_stack
                .entry((fr, callback_name(syms, f), class))
                .or_default() += n;
        }
    }
    let share = |n: u64, of: u64| if of > 0 { n as f64 / of as f64 } else { 0.0 };
    let mut top_callsites: Vec<Callsite> = by_site
        .into_iter()
        .map(|((callsite, callback, class), count)| Callsite {
            callsite,
            callback,
            class,
            count,
            share: share(count, total),
        })
        .collect();
    top_callsites.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| (&a.callsite, &a.callback).cmp(&(&b.callsite, &b.callback)))
    });
    top_callsites.truncate(JSON_ROWS);
    let mut top_stacks: Vec<StackRow> = by_stack
        .into_iter()
        .map(|((frames, callback, class), count)| StackRow {
            frames,
            callback,
            class,
            count,
            share: share(count, with_stack),
        })
        .collect();
    top_stacks.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.frames.cmp(&b.frames))
            .then_with(|| a.callback.cmp(&b.callback))
    });
    top_stacks.truncate(JSON_ROWS);
    (top_callsites, top_stacks, with_stack)
}
