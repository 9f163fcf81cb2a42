//! The preview of a first open: while a perf.data file streams in
//! ([`schedscope_parser::stream_with`]), each CPU's runs from the
//! `sched_switch` events decoded so far, drawn as lanes and replaced by
//! the full data when the load is done.
//!
//! The stream is the load itself: [`load`] is the parser's load through
//! the stream, which stores the events and shows them to the preview as
//! they come ([`schedscope_parser::load_through_stream_watched`]), so the
//! file is decoded once. Beside them the preview keeps each CPU's recorded
//! switch-ins (time, incoming task: 16 bytes each) and, now and then, turns
//! them into lanes ([`CpuLane`]) sent to the UI. A run starts at a
//! recorded switch and ends at the CPU's next one, exactly as the
//! timeline's runs from recorded switches; what the timeline adds later
//! is not there: no lost-event repairs, no waiting tasks or overlays, and
//! colours by task (the stream does not hand over the task table, so no
//! process ids or names: tasks are labelled by tid).
//!
//! The time axis is the span of the events decoded so far, extended in
//! proportion to the share of the file still to decode, so that the lanes
//! fill from left to right; the full data brings the true span.
//!
//! Building lanes costs time linear in the runs so far, taken from the
//! load: a snapshot is built only after at least [`SPACING`] times the
//! last one's cost has passed (and [`MIN_GAP`]), which keeps the preview
//! under about a tenth of the load's time however large the file.

use crate::data::{LoadMsg, Progress};
use crate::index::{CpuLane, Lanes, Pressure, Tid};
use schedscope_parser::{EventSink, LoadOptions};
use schedscope_trace::{Event, EventData, Trace};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A snapshot waits at least this many times the previous one's cost.
pub const SPACING: u32 = 10;

/// ... and at least this long after the previous one.
pub const MIN_GAP: Duration = Duration::from_millis(200);

/// No preview before the load has run this long: a file loaded faster
/// shows its full data at once, without a preview flashing by.
pub const FIRST_AFTER: Duration = Duration::from_millis(250);

/// The preview's state: every CPU's recorded switch-ins so far.
pub struct Preview {
    /// Where snapshots go (None: the preview is off, only the events are
    /// kept).
    tx: Option<Sender<LoadMsg>>,
    progress: Arc<Progress>,
    /// The file's size, for the share decoded.
    file_size: u64,
    /// CPUs the header names.
    nr_cpus: usize,
    /// Per CPU: (time, incoming tid) of each recorded switch.
    switches: Vec<Vec<(u64, Tid)>>,
    /// First and last event time so far.
    span: Option<(u64, u64)>,
    /// Events so far.
    events: u64,
    /// No snapshot before this.
    next: Instant,
    /// When the load began.
    began: Instant,
    /// Snapshots sent.
    pub sent: u32,
}

/// What a snapshot holds, before it becomes [`crate::Data`].
pub struct Snapshot {
    /// Trace start and the axis' end (ns).
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// Events decoded so far.
    pub events: u64,
    /// Tasks seen in a switch, by tid.
    pub tids: Vec<Tid>,
    /// The lanes.
    pub lanes: Lanes,
}

impl Preview {
    /// A preview sending its snapshots on `tx`; `progress` counts the
    /// bytes decoded (the axis' extension) and gets the events streamed.
    pub fn new(tx: Sender<LoadMsg>, progress: Arc<Progress>) -> Preview {
        Preview {
            tx: Some(tx),
            ..Preview::off(progress)
        }
    }

    /// A preview that sends nothing (the lanes come from elsewhere) and
    /// only counts the events.
    pub fn off(progress: Arc<Progress>) -> Preview {
        Preview {
            tx: None,
            progress,
            file_size: 0,
            nr_cpus: 0,
            switches: Vec::new(),
            span: None,
            events: 0,
            next: Instant::now() + FIRST_AFTER,
            began: Instant::now(),
            sent: 0,
        }
    }

    /// Take in the next events (in time order).
    pub fn push(&mut self, events: &[Event]) {
        let (Some(first), Some(last)) = (events.first(), events.last()) else {
            return;
        };
        self.events += events.len() as u64;
        self.progress.streamed.store(self.events, Ordering::Relaxed);
        if self.tx.is_none() {
            return;
        }
        let lo = self.span.map_or(first.ts.0, |s| s.0);
        self.span = Some((lo, last.ts.0.max(lo)));
        for e in events {
            if let EventData::Switch { next_tid, .. } = e.data {
                let c = e.cpu.0 as usize;
                if c >= self.switches.len() {
                    self.switches.resize_with(c + 1, Vec::new);
                }
                self.switches[c].push((e.ts.0, next_tid.0));
            }
        }
        if Instant::now() >= self.next {
            self.send(true);
        }
    }

    /// Forget everything taken in (the stream gave up; the whole load
    /// follows): later snapshots start again from nothing.
    pub fn reset(&mut self) {
        self.switches = Vec::new();
        self.span = None;
        self.events = 0;
        self.progress.streamed.store(0, Ordering::Relaxed);
    }

    /// Build a snapshot and send it; `extend`: the axis reaches past the
    /// last event by the share of the file still to decode.
    fn send(&mut self, extend: bool) {
        let t = Instant::now();
        let Some(s) = self.snapshot(extend) else {
            return;
        };
        let data = crate::data::Data::preview(s);
        if let Some(tx) = &self.tx {
            if tx.send(LoadMsg::Preview(Box::new(data))).is_err() {
                self.tx = None;
            }
        }
        self.sent += 1;
        let cost = t.elapsed();
        self.next = Instant::now() + (cost * SPACING).max(MIN_GAP);
    }

    /// The lanes of the switches so far; None before the first event.
    pub fn snapshot(&self, extend: bool) -> Option<Snapshot> {
        let (start, last) = self.span?;
        let decoded = self.progress.decoded.load(Ordering::Relaxed);
        let end = if extend && decoded > 0 && decoded < self.file_size {
            let f = decoded as f64 / self.file_size as f64;
            start + ((last - start) as f64 / f) as u64
        } else {
            last
        }
        .max(last);
        let ncpu = self.switches.len().max(self.nr_cpus);
        let mut tids: Vec<Tid> = Vec::new();
        let mut runs: Vec<(u64, u64, Tid)> = Vec::new();
        let cpus = (0..ncpu)
            .map(|c| {
                let sw = self.switches.get(c).map_or(&[][..], |v| &v[..]);
                runs.clear();
                runs.extend(sw.iter().enumerate().map(|(i, &(ts, tid))| {
                    let e = sw.get(i + 1).map_or(last, |n| n.0);
                    (ts, e.max(ts), tid)
                }));
                tids.extend(sw.iter().map(|s| s.1).filter(|&t| t != 0));
                CpuLane::with_pressure(c as u32, &runs, Pressure::default(), |t| t)
            })
            .collect();
        tids.sort_unstable();
        tids.dedup();
        let lanes = Lanes {
            cpus,
            wakeups: (0..ncpu).map(|_| Default::default()).collect(),
            preemptions: (0..ncpu).map(|_| Default::default()).collect(),
            wasted: (0..ncpu).map(|_| Default::default()).collect(),
            repaired: (0..ncpu).map(|_| Default::default()).collect(),
            ..Lanes::default()
        };
        Some(Snapshot {
            start,
            end,
            events: self.events,
            tids,
            lanes,
        })
    }

    /// The stream is done: send the lanes of the whole trace (on a thread
    /// of its own, beside the analyses) when the load has run long
    /// enough to show a preview ([`FIRST_AFTER`]), and free the switches.
    pub fn finish(&mut self) {
        let mut rest = std::mem::replace(self, Preview::off(Arc::clone(&self.progress)));
        let late = rest.sent > 0 || rest.began.elapsed() >= FIRST_AFTER;
        if rest.tx.is_some() && rest.span.is_some() && late {
            std::thread::spawn(move || rest.send(false));
        }
    }

    /// Send the lanes of everything taken in now, whatever the time (the
    /// test hook that holds the analyses back).
    pub fn show_now(&mut self) {
        self.send(false);
    }
}

/// The preview watches the stream the load stores
/// ([`schedscope_parser::load_through_stream_watched`]).
impl EventSink for Preview {
    fn start(&mut self, meta: &Trace) {
        self.nr_cpus = meta.nr_cpus as usize;
    }

    fn events(&mut self, events: &[Event]) {
        self.push(events);
    }

    fn given_up(&mut self) {
        self.reset();
    }
}

/// Load the file at `path` as [`schedscope_parser::load_with_progress`]
/// does, but through the stream whatever its size (perf.data files),
/// handing the events to `preview` as they come; other files (and those
/// the stream gives up on) are loaded whole, without a preview.
pub fn load(
    path: &Path,
    opts: &LoadOptions,
    decoded: &AtomicU64,
    preview: &mut Preview,
) -> Result<Trace, String> {
    preview.file_size = std::fs::metadata(path).map_or(0, |m| m.len());
    schedscope_parser::load_through_stream_watched(path, opts, decoded, preview)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
