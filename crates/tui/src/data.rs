//! What the UI shows once loading is done, and the background job that
//! makes it: decode (the caller's loader), then the analyses
//! ([`Report::compute_beside_timeline`], all sections), which build the
//! timeline once; its lane index is built beside the sections that read it.

use crate::groups::CpuGroups;
use crate::index::{Lanes, Tid};
use crate::jumps::{Find, Jump, Lazy, Sources};
use crate::overlay::{EventMarks, Throttled};
use crate::tables::Tables;
use schedscope_analysis::throttle::Throttling;
use schedscope_analysis::{Options, Report, Sections, Timeline};
use schedscope_trace::Trace;
use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver};
use std::time::Instant;

/// Decodes the input file; errors name the file and what is wrong.
pub type Loader = Box<dyn FnOnce() -> Result<Trace, String> + Send>;

/// What the background job reports.
pub enum LoadMsg {
    /// Entering a phase (shown in the status line).
    Phase(&'static str),
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
    /// Per-CPU lane index.
    pub lanes: Lanes,
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
        Data::assemble(timeline, report, lanes, EventMarks::default())
    }

    /// The rest of the data (tasks, tables, gang spans) once the timeline,
    /// its lanes and the event marks are built.
    fn assemble(timeline: Timeline, report: Report, lanes: Lanes, mut marks: EventMarks) -> Data {
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
        }
    }

    /// Timeline, lanes and report of a decoded trace: the timeline and
    /// its index on one thread while the analyses run on another. The
    /// trace is kept for the event detail pane.
    pub fn from_trace(trace: Trace, phase: &dyn Fn(&'static str)) -> Data {
        let mut data = Data::analyse(&trace, phase);
        data.cpu_groups = CpuGroups::new(data.lanes.cpus.len(), trace.topology.as_ref());
        data.trace = Some(trace);
        data
    }

    fn analyse(trace: &Trace, phase: &dyn Fn(&'static str)) -> Data {
        phase("analysing");
        // The report builds the timeline once; the lane index is built
        // from it while gang, lhp and profile read it.
        let (report, timeline, (lanes, marks)) = timed("tui report+lanes", || {
            Report::compute_beside_timeline(trace, Sections::all(), &Options::default(), |tl| {
                let lanes = timed("tui lanes", || Lanes::build(tl));
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

/// Run `loader` then [`Data::from_trace`] on a background thread.
pub fn spawn(loader: Loader) -> Receiver<LoadMsg> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let _ = tx.send(LoadMsg::Phase("decoding"));
        let msg = match loader() {
            Ok(trace) => {
                let phase = |p: &'static str| {
                    let _ = tx.send(LoadMsg::Phase(p));
                };
                let mut data = Data::from_trace(trace, &phase);
                data.load_secs = t0.elapsed().as_secs_f64();
                LoadMsg::Done(Box::new(data))
            }
            Err(e) => LoadMsg::Failed(e),
        };
        let _ = tx.send(msg);
    });
    rx
}
