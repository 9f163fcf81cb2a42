//! What the UI shows once loading is done, and the background job that
//! makes it: the lanes from the cache when it holds this file's ([`cache`],
//! shown at once), then decode (the caller's loader; a streaming one sends
//! [`crate::preview`]'s lanes of the part decoded so far while it runs,
//! when there was no cache), then the analyses
//! ([`Report::compute_beside_timeline`], all sections), which build the
//! timeline once; its lane index is built beside the sections that read it.
//! The lanes of a load that found no valid cache are written to it.

use crate::cache::{self, Key, Meta};
use crate::groups::CpuGroups;
use crate::index::{Lanes, Tid};
use crate::jumps::{Find, Jump, Lazy, Sources};
use crate::overlay::{EventMarks, Throttled};
use crate::preview::{Preview, Snapshot};
use crate::tables::Tables;
use schedscope_analysis::throttle::Throttling;
use schedscope_analysis::{Options, Report, Sections, ThreadTimeline, Timeline};
use schedscope_trace::{Trace, TraceFormat};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Decodes the input file, adding to the counter the bytes of the file
/// decoded so far (for the progress display; a loader may count nothing);
/// errors name the file and what is wrong.
pub type Loader = Box<dyn FnOnce(&AtomicU64) -> Result<Trace, String> + Send>;

/// A [`Loader`] that also hands the events, as it decodes them, to the
/// preview ([`crate::preview::load`] is one).
pub type StreamLoader = Box<dyn FnOnce(&AtomicU64, &mut Preview) -> Result<Trace, String> + Send>;

/// How the background job decodes the file.
pub enum Source {
    /// Whole, shown when done.
    Whole(Loader),
    /// Streamed, with a preview while it runs.
    Stream(StreamLoader),
}

impl From<Loader> for Source {
    fn from(l: Loader) -> Source {
        Source::Whole(l)
    }
}

impl From<StreamLoader> for Source {
    fn from(l: StreamLoader) -> Source {
        Source::Stream(l)
    }
}

/// How far the background job got, read by the UI as it draws.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of the file decoded.
    pub decoded: AtomicU64,
    /// Events decoded, once decoding is done (0 before).
    pub events: AtomicU64,
    /// Events the stream handed over so far (a streaming load).
    pub streamed: AtomicU64,
}

/// The lane cache of a load (see [`cache`]).
#[derive(Clone, Debug)]
pub struct CacheUse {
    /// The trace file (the cache's key is its path, size, mtime and head).
    pub trace: PathBuf,
    /// The cache directory ([`cache::default_dir`]).
    pub dir: PathBuf,
}

/// What the background job reports.
pub enum LoadMsg {
    /// Entering a phase (shown in the status line).
    Phase(&'static str),
    /// The lanes, read from the cache, while the full load goes on
    /// ([`Data::from_cache`]).
    Cached(Box<Data>),
    /// The lanes of the recorded switches decoded so far, while the
    /// streaming load goes on ([`Data::preview`]); sent again as it grows.
    Preview(Box<Data>),
    /// Everything is ready.
    Done(Box<Data>),
    /// Loading failed (message names the file).
    Failed(String),
}

/// A task as the lanes label it.
#[derive(Clone, Debug)]
pub struct TaskInfo {
    /// Command name.
    pub comm: String,
    /// Process id, when known.
    pub tgid: Option<Tid>,
    /// Two-character code for colourless lanes (as `perf sched map`).
    pub code: [char; 2],
    /// Index in [`Timeline::threads`].
    pub thread: usize,
}

/// The loaded trace, its timeline, lane index and analyses.
pub struct Data {
    /// Per-thread states and per-CPU runs.
    pub timeline: Timeline,
    /// Every analysis section.
    pub report: Report,
    /// Per-CPU lane index (shared with the lane cache's writer).
    pub lanes: Arc<Lanes>,
    /// Per-CPU overlay indexes of events (PLE exits, IPIs) and gang episodes.
    pub marks: EventMarks,
    /// Tasks by tid.
    pub tasks: HashMap<Tid, TaskInfo>,
    /// Rows of the analysis tabs.
    pub tables: Tables,
    /// Time to load and analyse (seconds).
    pub load_secs: f64,
    /// The decoded events, for the detail pane (None when the data was
    /// built from a timeline alone).
    pub trace: Option<Trace>,
    /// Event times some table jumps search, gathered on first use.
    pub lazy: Lazy,
    /// How the CPU lanes group above [`crate::app::GROUP_ABOVE`] CPUs.
    pub cpu_groups: CpuGroups,
    /// Only the lanes, read from the cache ([`Data::from_cache`]): no
    /// analyses, no events, no thread states yet.
    pub from_cache: bool,
    /// Only the lanes of the recorded switches decoded so far
    /// ([`Data::preview`]): as `from_cache`, and no repairs, overlays or
    /// task names either.
    pub preview: bool,
}

/// The two-character code of the `i`-th task: `A0`..`Z9`, then `a0`..`z9`,
/// then two letters.
pub fn task_code(i: usize) -> [char; 2] {
    const UP: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const LO: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    if i < 260 {
        [UP[i / 10] as char, (b'0' + (i % 10) as u8) as char]
    } else if i < 520 {
        let j = i - 260;
        [LO[j / 10] as char, (b'0' + (j % 10) as u8) as char]
    } else {
        let j = (i - 520) % (26 * 26);
        [UP[j / 26] as char, LO[j % 26] as char]
    }
}

impl Data {
    /// Index an analysed timeline (the report's own sections are used as
    /// they are).
    pub fn new(timeline: Timeline, report: Report) -> Data {
        let lanes = Lanes::build(&timeline);
        Data::from_parts(timeline, report, lanes)
    }

    /// [`Data::new`] with the lane index already built from `timeline`.
    pub fn from_parts(timeline: Timeline, report: Report, lanes: Lanes) -> Data {
        Data::assemble(timeline, report, Arc::new(lanes), EventMarks::default())
    }

    /// The rest of the data (tasks, tables, gang spans) once the timeline,
    /// its lanes and the event marks are built.
    fn assemble(
        timeline: Timeline,
        report: Report,
        lanes: Arc<Lanes>,
        mut marks: EventMarks,
    ) -> Data {
        let gangs = report.gang.as_ref().and_then(|s| s.0.as_ref().ok());
        marks.gang = EventMarks::gang_spans(&timeline, gangs);
        let tasks = timeline
            .threads
            .iter()
            .enumerate()
            .map(|(i, th)| {
                (
                    th.tid.0,
                    TaskInfo {
                        comm: th.comm.clone(),
                        tgid: th.tgid.map(|t| t.0),
                        code: task_code(i),
                        thread: i,
                    },
                )
            })
            .collect();
        let tables = Tables::new(&report, &marks.bursts);
        let ncpu = lanes.cpus.len();
        Data {
            timeline,
            report,
            lanes,
            marks,
            tasks,
            tables,
            load_secs: 0.0,
            trace: None,
            lazy: Lazy::default(),
            cpu_groups: CpuGroups::new(ncpu, None),
            from_cache: false,
            preview: false,
        }
    }

    /// The lanes read from the cache, as data the timeline draws: the
    /// threads carry their names but no states, the report only the event
    /// count and the time span, and there are no event overlays.
    pub fn from_cache(meta: Meta, lanes: Lanes) -> Data {
        let mut data = Data::lanes_only_data(meta, lanes);
        data.from_cache = true;
        data
    }

    /// The preview's lanes ([`crate::preview`]): tasks by tid only, no
    /// names or processes; the axis is the snapshot's.
    pub fn preview(s: Snapshot) -> Data {
        let groups = CpuGroups::new(s.lanes.cpus.len(), None);
        let meta = Meta {
            start: s.start,
            end: s.end,
            events: s.events,
            threads: s
                .tids
                .into_iter()
                .map(|t| (t, None, String::new()))
                .collect(),
            groups,
        };
        let mut data = Data::lanes_only_data(meta, s.lanes);
        data.preview = true;
        data
    }

    /// Whether only the lanes are there (from the cache or a preview):
    /// what needs the analyses, the events or the threads' states waits.
    pub fn lanes_only(&self) -> bool {
        self.from_cache || self.preview
    }

    fn lanes_only_data(meta: Meta, lanes: Lanes) -> Data {
        let mut timeline = Timeline::default();
        timeline.start = schedscope_trace::Ts(meta.start);
        timeline.end = schedscope_trace::Ts(meta.end);
        timeline.threads = meta
            .threads
            .into_iter()
            .map(|(tid, tgid, comm)| ThreadTimeline {
                tid: schedscope_trace::Tid(tid),
                tgid: tgid.map(schedscope_trace::Tid),
                comm,
                ..ThreadTimeline::default()
            })
            .collect();
        let trace = Trace::new("", TraceFormat::PerfData);
        let mut report = Report::compute(&trace, Sections::default(), &Options::default());
        report.trace.events = meta.events;
        report.trace.cpus = lanes.cpus.len() as u32;
        report.trace.start_ns = meta.start;
        report.trace.end_ns = meta.end;
        let mut data = Data::assemble(timeline, report, Arc::new(lanes), EventMarks::default());
        data.cpu_groups = meta.groups;
        data
    }

    /// What the cache keeps besides the lanes.
    pub fn cache_meta(&self) -> Meta {
        Meta {
            start: self.timeline.start.0,
            end: self.timeline.end.0,
            events: self.report.trace.events,
            threads: self
                .timeline
                .threads
                .iter()
                .map(|t| (t.tid.0, t.tgid.map(|p| p.0), t.comm.clone()))
                .collect(),
            groups: self.cpu_groups.clone(),
        }
    }

    /// Timeline, lanes and report of a decoded trace: the timeline and
    /// its index on one thread while the analyses run on another. The
    /// trace is kept for the event detail pane.
    pub fn from_trace(trace: Trace, phase: &dyn Fn(&'static str)) -> Data {
        Data::from_trace_reusing(trace, None, phase)
    }

    /// [`Data::from_trace`] that takes `lanes` (a second open's, read
    /// from the lane cache) as the timeline's lane index instead of
    /// building it, when they hold the timeline's runs ([`holds_runs`]).
    pub fn from_trace_reusing(
        trace: Trace,
        lanes: Option<Arc<Lanes>>,
        phase: &dyn Fn(&'static str),
    ) -> Data {
        let mut data = Data::analyse(&trace, lanes, phase);
        data.cpu_groups = CpuGroups::new(data.lanes.cpus.len(), trace.topology.as_ref());
        data.trace = Some(trace);
        data
    }

    fn analyse(trace: &Trace, reuse: Option<Arc<Lanes>>, phase: &dyn Fn(&'static str)) -> Data {
        phase("analysing");
        // The report builds the timeline once; the lane index is built
        // from it while gang, lhp and profile read it.
        let (report, timeline, (lanes, marks)) = timed("tui report+lanes", || {
            Report::compute_beside_timeline(trace, Sections::all(), &Options::default(), |tl| {
                let lanes = match reuse.filter(|l| timed("tui lanes check", || holds_runs(l, tl))) {
                    Some(l) => l,
                    None => Arc::new(timed("tui lanes", || Lanes::build(tl))),
                };
                let mut marks = timed("tui marks", || EventMarks::from_trace(trace, tl.cpus.len()));
                marks.throttled = Throttled::new(Throttling::compute(trace), tl);
                (lanes, marks)
            })
        });
        phase("indexing");
        timed("tui assemble", || {
            Data::assemble(timeline, report, lanes, marks)
        })
    }

    /// `comm[tid]` of a task.
    pub fn label(&self, tid: Tid) -> String {
        match self.tasks.get(&tid) {
            Some(t) => format!("{}[{tid}]", t.comm),
            None if tid == 0 => "idle".to_string(),
            None => format!("[{tid}]"),
        }
    }

    /// Search the target of a table row's jump ([`Find::resolve`] on this
    /// data); the error says why there is none.
    pub fn resolve(&self, f: &Find) -> Result<Jump, String> {
        f.resolve(&Sources {
            timeline: &self.timeline,
            trace: self.trace.as_ref(),
            lazy: &self.lazy,
            label: &|t| self.label(t),
        })
    }

    /// The process a task's colour follows (its tgid, else itself).
    pub fn colour_key(&self, tid: Tid) -> Tid {
        self.tasks.get(&tid).and_then(|t| t.tgid).unwrap_or(tid)
    }
}

/// Whether `lanes` hold the runs of `tl` (the same CPUs, and on each the
/// same runs: start and task; the ends are the next starts): the check
/// that lanes read from the cache are this timeline's before they are
/// taken for it.
pub fn holds_runs(lanes: &Lanes, tl: &Timeline) -> bool {
    lanes.cpus.len() == tl.cpus.len()
        && lanes.cpus.iter().zip(&tl.cpus).all(|(lane, runs)| {
            lane.len() == runs.len()
                && lane
                    .runs()
                    .zip(runs)
                    .all(|((s, _, tid), r)| s == r.ts.0 && tid == r.tid.0)
        })
}

/// Run `f`; with `SCHEDSCOPE_TIMING` set, print its wall time on stderr
/// (`timing: NAME MS ms`, as the analysis crate does) for the benchmarks.
fn timed<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    if std::env::var_os("SCHEDSCOPE_TIMING").is_some() {
        eprintln!("timing: {name} {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    r
}

/// The lanes in the cache `c` for the trace as it is now (its key, and
/// the lanes when the cache holds them).
fn read_cache(c: &CacheUse) -> (Option<Key>, Option<Data>) {
    let Some(key) = Key::of(&c.trace) else {
        return (None, None);
    };
    let lanes = timed("tui cache read", || cache::load(&c.dir, &key));
    let data = lanes.map(|(meta, lanes)| timed("tui cache data", || Data::from_cache(meta, lanes)));
    (Some(key), data)
}

/// Write `lanes` to the cache `c`, when the file still has the key it had
/// when its load began.
fn write_cache(c: &CacheUse, key: &Key, meta: &Meta, lanes: &Lanes) {
    let bytes = timed("tui cache encode", || cache::encode(key, meta, lanes));
    if Key::of(&c.trace).as_ref() == Some(key) {
        let _ = timed("tui cache write", || cache::store(&c.dir, key, &bytes));
    }
}

/// The background job of [`spawn`].
pub struct Job {
    /// Its messages.
    pub rx: Receiver<LoadMsg>,
    /// How far it got.
    pub progress: Arc<Progress>,
    /// The thread: after [`LoadMsg::Done`] it only writes the lane cache,
    /// which quitting waits for (so as not to cut the file short).
    pub thread: JoinHandle<()>,
}

/// Run `loader` then [`Data::from_trace`] on a background thread; with a
/// cache, first send the lanes it holds for this file, and write them
/// there after the load when it held none (or stale ones). A streaming
/// loader without cached lanes sends previews while it decodes.
pub fn spawn(loader: impl Into<Source>, cache: Option<CacheUse>) -> Job {
    let loader = loader.into();
    let (tx, rx) = channel();
    let progress = Arc::new(Progress::default());
    let p = Arc::clone(&progress);
    let thread = std::thread::spawn(move || {
        let t0 = Instant::now();
        let (key, cached) = match &cache {
            Some(c) => {
                let _ = tx.send(LoadMsg::Phase("reading the lane cache"));
                read_cache(c)
            }
            None => (None, None),
        };
        let hit = cached.is_some();
        // the full load takes the cached lanes instead of building them
        // again when they are its timeline's
        let reuse = cached.as_ref().map(|d| Arc::clone(&d.lanes));
        if let Some(d) = cached {
            let _ = tx.send(LoadMsg::Cached(Box::new(d)));
        }
        let _ = tx.send(LoadMsg::Phase("decoding"));
        let loaded = match loader {
            Source::Whole(l) => l(&p.decoded),
            Source::Stream(l) => {
                let mut preview = if hit {
                    Preview::off(Arc::clone(&p))
                } else {
                    Preview::new(tx.clone(), Arc::clone(&p))
                };
                let r = l(&p.decoded, &mut preview);
                if r.is_ok() {
                    preview.finish();
                }
                drop(preview);
                r
            }
        };
        let trace = match loaded {
            Ok(t) => t,
            Err(e) => {
                let _ = tx.send(LoadMsg::Failed(e));
                return;
            }
        };
        p.events.store(trace.event_count(), Ordering::Relaxed);
        let phase = |ph: &'static str| {
            let _ = tx.send(LoadMsg::Phase(ph));
        };
        let mut data = Data::from_trace_reusing(trace, reuse, &phase);
        data.load_secs = t0.elapsed().as_secs_f64();
        let write = match (&cache, key) {
            (Some(c), Some(key)) if !hit => {
                Some((c, key, data.cache_meta(), Arc::clone(&data.lanes)))
            }
            _ => None,
        };
        let _ = tx.send(LoadMsg::Done(Box::new(data)));
        if let Some((c, key, meta, lanes)) = write {
            write_cache(c, &key, &meta, &lanes);
        }
    });
    Job {
        rx,
        progress,
        thread,
    }
}
