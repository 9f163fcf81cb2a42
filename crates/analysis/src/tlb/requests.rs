//! The single time-ordered pass: IPI events -> logical requests, deliveries,
//! handler run times, tlb_flush counts per reason (tallied in the pass, no
//! record per event, or taken from the decoder's [`Trace::tallies`] when
//! the load tallied the events). No symbolization here; the caller classifies requests
//! once their function names are known.

use super::Timed;
use schedscope_trace::hash::FxMap;
use schedscope_trace::{Cpu, Event, EventData, StackId, Sym, Tid, Trace, Ts};
use std::collections::{BTreeMap, HashMap};

/// "CPU `cpu` (thread `tid`) asked `targets` to run `func`."
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Request {
    /// When the first queue/send event happened.
    pub ts: Ts,
    /// Sending CPU.
    pub cpu: Cpu,
    /// Sending thread.
    pub tid: Tid,
    /// Where it was queued/sent from.
    pub callsite: Sym,
    /// Function the targets run (0 = none: reschedule).
    pub func: Sym,
    /// Target CPUs, ascending for csd groups.
    pub targets: Targets,
    /// Call chain of the first event.
    pub stack: StackId,
    /// Hardware IPIs (`ipi_send_*`) attached.
    pub ipis: u32,
    /// An `ipi_send_*` with a callback seen in a trace that has csd events
    /// but not after a csd queue: either a generic IPI whose csd was not
    /// traced (dropped by the caller) or an IPI of another kind (irq_work...).
    pub standalone_ipi: bool,
    /// Built from csd_queue_cpu events.
    csd: bool,
}

/// The target CPUs of a request: the first inline (most requests have one
/// target: no allocation), the others in a vector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Targets {
    first: Option<u32>,
    more: Vec<u32>,
}

impl Targets {
    fn one(cpu: u32) -> Targets {
        Targets {
            first: Some(cpu),
            more: Vec::new(),
        }
    }

    fn push(&mut self, cpu: u32) {
        if self.first.is_none() {
            self.first = Some(cpu);
        } else {
            self.more.push(cpu);
        }
    }

    fn last(&self) -> Option<u32> {
        self.more.last().copied().or(self.first)
    }

    /// Number of targets.
    pub fn len(&self) -> usize {
        self.first.map_or(0, |_| 1 + self.more.len())
    }

    /// The targets in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.first.into_iter().chain(self.more.iter().copied())
    }
}

impl FromIterator<u32> for Targets {
    fn from_iter<I: IntoIterator<Item = u32>>(it: I) -> Targets {
        let mut t = Targets::default();
        for c in it {
            t.push(c);
        }
        t
    }
}

/// Whether the pass does anything with an event besides closing the
/// sending CPU's open csd group.
fn relevant(d: &EventData) -> bool {
    matches!(
        d,
        EventData::CsdQueue { .. }
            | EventData::IpiSendCpu { .. }
            | EventData::IpiSendCpumask { .. }
            | EventData::CsdFunctionEntry { .. }
            | EventData::CsdFunctionExit { .. }
            | EventData::TlbFlush { .. }
            | EventData::IrqVector { .. }
    )
}

/// Everything the pass found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub requests: Vec<Request>,
    /// Queue -> entry latency per request index.
    pub deliveries: Vec<Timed>,
    /// Entry -> exit run time per request index.
    pub handlers: Vec<Timed>,
    /// `tlb:tlb_flush` counts per reason code, in order of first appearance.
    pub flushes: Vec<(i32, FlushTally)>,
    pub irq_vectors: BTreeMap<String, u64>,
    pub undelivered: u64,
    pub unmatched_ipis: u64,
}

fn is_null(s: Sym) -> bool {
    s.addr() == Some(0)
}

/// Page-count buckets of [`FlushTally::pages`]: full (TLB_FLUSH_ALL), 0,
/// 1, then `[2^k, 2^(k+1))` for k = 1..=62.
pub(super) const PAGE_BUCKETS: usize = 65;

/// `tlb:tlb_flush` events of one reason, counted in the pass (no per-event
/// record is kept).
#[derive(Clone, Debug)]
pub(super) struct FlushTally {
    pub count: u64,
    /// Events per emitting CPU (index = CPU), as long as the highest CPU seen.
    pub by_cpu: Vec<u64>,
    /// Events per [`page_bucket`] index.
    pub pages: [u64; PAGE_BUCKETS],
}

/// The [`FlushTally::pages`] index of a page count.
pub(super) fn page_bucket(pages: i64) -> usize {
    match pages {
        p if p < 0 => 0,
        0 => 1,
        1 => 2,
        // floor(log2 pages) + 2, for pages >= 2: 3..=64
        p => (65 - (p as u64).leading_zeros()) as usize,
    }
}

/// A page count that falls in bucket `i` of [`page_bucket`] (its lower bound).
pub(super) fn bucket_pages(i: usize) -> i64 {
    match i {
        0 => -1,
        1 => 0,
        i => 1i64 << (i - 2).min(62),
    }
}

/// The pass's state: the requests found so far and what is open. Fed the
/// events in time order, in slices of any size ([`Pass::push`]).
pub(super) struct Pass<'t> {
    trace: &'t Trace,
    /// The trace records csd:csd_queue_cpu.
    has_csd: bool,
    out: Scan,
    /// Open csd group per sending CPU.
    open: Vec<Option<usize>>,
    /// (target cpu, csd) -> (queue time, request index).
    pending: FxMap<(u32, u64), (Ts, usize)>,
    /// Per target CPU: stack of running csd functions (csd, entry time, request).
    running: Vec<Vec<(u64, Ts, Option<usize>)>>,
    irq_names: HashMap<u16, String>,
    /// The index in `out.flushes` used last.
    last_reason: usize,
    /// A csd_queue_cpu was seen: no csd group can be open before the
    /// first one, so until then the other events need not be looked at
    /// beyond their kind.
    csd_seen: bool,
}

impl<'t> Pass<'t> {
    /// Start the pass. `has_csd`: the trace records csd:csd_queue_cpu, so
    /// that ipi_send_* events with a callback are the hardware side of csd
    /// requests. Reads only the trace's metadata (CPU count, cpumasks,
    /// event names, tallies), never `trace.events`.
    pub(super) fn new(trace: &'t Trace, has_csd: bool) -> Pass<'t> {
        let ncpu = (trace.nr_cpus as usize).max(1);
        Pass {
            trace,
            has_csd,
            out: Scan::default(),
            open: vec![None; ncpu],
            pending: FxMap::default(),
            running: vec![Vec::new(); ncpu],
            irq_names: HashMap::new(),
            last_reason: 0,
            csd_seen: false,
        }
    }

    /// The next events, in time order after those pushed before.
    pub(super) fn push(&mut self, events: &[Event]) {
        let trace = self.trace;
        for e in events {
            let c = e.cpu.0 as usize;
            if !relevant(&e.data) {
                // Any other event on the CPU closes its open csd group.
                if self.csd_seen {
                    if let Some(o) = self.open.get_mut(c) {
                        *o = None;
                    }
                }
                continue;
            }
            if c >= self.open.len() {
                self.open.resize(c + 1, None);
                self.running.resize(c + 1, Vec::new());
            }
            match e.data {
                EventData::CsdQueue {
                    cpu: target,
                    callsite,
                    func,
                    csd,
                } => {
                    self.csd_seen = true;
                    self.csd_queue(e, target.0, callsite, func, csd);
                }
                EventData::IpiSendCpu {
                    cpu: target,
                    callsite,
                    callback,
                } => self.ipi(e, Targets::one(target.0), callsite, callback),
                EventData::IpiSendCpumask {
                    mask,
                    callsite,
                    callback,
                } => {
                    let targets: Targets = trace
                        .cpumasks
                        .get(mask.0 as usize)
                        .map(|m| m.iter().collect())
                        .unwrap_or_default();
                    self.ipi(e, targets, callsite, callback);
                }
                EventData::CsdFunctionEntry { csd, .. } => self.csd_entry(e, csd),
                EventData::CsdFunctionExit { csd, .. } => self.csd_exit(e, csd),
                EventData::TlbFlush { reason, pages } => {
                    // (no csd group to close: the kernel traces a shootdown's
                    // "remote IPI send" flush before queueing its csds and the
                    // local flush after sending the IPIs; tallied loads do not
                    // even keep these events)
                    flush(&mut self.out, &mut self.last_reason, reason, pages, c, 1);
                }
                EventData::IrqVector { entry, .. } => self.irq_vector(e, entry),
                _ => self.open[c] = None, // not reached: see `relevant`
            }
        }
    }

    /// Everything the pass found, once every event was pushed.
    pub(super) fn finish(mut self) -> Scan {
        // Flushes a filtered load tallied instead of keeping.
        for t in &self.trace.tallies {
            if let EventData::TlbFlush { reason, pages } = t.data {
                flush(
                    &mut self.out,
                    &mut self.last_reason,
                    reason,
                    pages,
                    t.cpu.0 as usize,
                    t.count,
                );
            }
        }
        self.out.undelivered += self.pending.len() as u64;
        self.out
    }

    /// A csd queued for `target`: it joins the sending CPU's open group
    /// (same thread, callsite and function, ascending targets) or starts a
    /// request.
    fn csd_queue(&mut self, e: &Event, target: u32, callsite: Sym, func: Sym, csd: u64) {
        let c = e.cpu.0 as usize;
        let joined = self.open[c].and_then(|i| {
            let r = &mut self.out.requests[i];
            let ok = r.csd
                && r.tid == e.tid
                && r.callsite == callsite
                && r.func == func
                && r.targets.last().is_some_and(|l| target > l);
            ok.then(|| {
                r.targets.push(target);
                i
            })
        });
        let idx = match joined {
            Some(i) => i,
            None => {
                self.out.requests.push(Request {
                    ts: e.ts,
                    cpu: e.cpu,
                    tid: e.tid,
                    callsite,
                    func,
                    targets: Targets::one(target),
                    stack: e.stack,
                    ipis: 0,
                    standalone_ipi: false,
                    csd: true,
                });
                self.out.requests.len() - 1
            }
        };
        self.open[c] = Some(idx);
        if self.pending.insert((target, csd), (e.ts, idx)).is_some() {
            // The previous queue of this csd was never seen running.
            self.out.undelivered += 1;
        }
    }

    /// A hardware IPI: the IPI of the sending CPU's open csd group, or a
    /// request of its own.
    fn ipi(&mut self, e: &Event, targets: Targets, callsite: Sym, callback: Sym) {
        let c = e.cpu.0 as usize;
        let group = self.open[c].take();
        if !is_null(callback) && self.has_csd {
            if let Some(i) = group {
                self.out.requests[i].ipis += 1;
                return;
            }
        }
        self.out.requests.push(Request {
            ts: e.ts,
            cpu: e.cpu,
            tid: e.tid,
            callsite,
            func: callback,
            targets,
            stack: e.stack,
            ipis: 1,
            standalone_ipi: self.has_csd && !is_null(callback),
            csd: false,
        });
    }

    /// A csd function starts on its target: the delivery of its queue.
    fn csd_entry(&mut self, e: &Event, csd: u64) {
        let c = e.cpu.0 as usize;
        self.open[c] = None;
        let ri = self.pending.remove(&(e.cpu.0, csd)).map(|(qts, ri)| {
            self.out.deliveries.push((ri, e.ts.since(qts)));
            ri
        });
        self.running[c].push((csd, e.ts, ri));
    }

    /// A csd function ends on its target: the handler's run time.
    fn csd_exit(&mut self, e: &Event, csd: u64) {
        let c = e.cpu.0 as usize;
        self.open[c] = None;
        if let Some(pos) = self.running[c].iter().rposition(|r| r.0 == csd) {
            let (_, ets, ri) = self.running[c].remove(pos);
            self.running[c].truncate(pos);
            if let Some(ri) = ri {
                self.out.handlers.push((ri, e.ts.since(ets)));
            }
        }
    }

    /// An IRQ vector entry or exit: entries counted by event name.
    fn irq_vector(&mut self, e: &Event, entry: bool) {
        self.open[e.cpu.0 as usize] = None;
        if entry {
            let trace = self.trace;
            let name = self
                .irq_names
                .entry(e.name.0)
                .or_insert_with(|| trace.event_name(e.name).to_string());
            *self.out.irq_vectors.entry(name.clone()).or_default() += 1;
        }
    }
}

/// Count `n` tlb_flush events of `reason` and `pages` on CPU `c`;
/// `last_reason`: the index in `out.flushes` used last.
fn flush(out: &mut Scan, last_reason: &mut usize, reason: i32, pages: i64, c: usize, n: u64) {
    // Few reasons: the last one used, else a short search.
    if out.flushes.get(*last_reason).is_none_or(|f| f.0 != reason) {
        *last_reason = match out.flushes.iter().position(|f| f.0 == reason) {
            Some(i) => i,
            None => {
                out.flushes.push((
                    reason,
                    FlushTally {
                        count: 0,
                        by_cpu: Vec::new(),
                        pages: [0; PAGE_BUCKETS],
                    },
                ));
                out.flushes.len() - 1
            }
        };
    }
    if let Some((_, f)) = out.flushes.get_mut(*last_reason) {
        f.count += n;
        if f.by_cpu.len() <= c {
            f.by_cpu.resize(c + 1, 0);
        }
        f.by_cpu[c] += n;
        f.pages[page_bucket(pages)] += n;
    }
}
