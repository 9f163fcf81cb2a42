//! TUI frame costs on a real recording: time to first frame (decode,
//! timeline, analyses, lane index, first draw) and per redraw at several
//! zoom levels, on the file and on its timeline tiled 10x in time (the
//! "file 10x larger": same tasks and CPUs, ten times the runs and
//! intervals, without needing a 1.8 GB file on disk).
//!
//! The file comes from `SCHEDSCOPE_TUI_BENCH_FILE` (e.g.
//! `/work/bench/big.data`); without it the benchmarks say so and measure
//! nothing. Run: `SCHEDSCOPE_TUI_BENCH_FILE=/work/bench/big.data cargo bench -p schedscope-tui --bench frame`.
//! Targets (issue 12): first frame under 1 s, every redraw under 16 ms.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use schedscope_analysis::timeline::Intervals;
use schedscope_analysis::{CpuRun, Options, Report, Sections, StateInterval, Timeline};
use schedscope_trace::{Trace, TraceFormat, Ts};
use schedscope_tui::{App, Data};
use std::sync::OnceLock;

const ENV: &str = "SCHEDSCOPE_TUI_BENCH_FILE";
const AREA: Rect = Rect {
    x: 0,
    y: 0,
    width: 200,
    height: 50,
};

fn main() {
    if std::env::var_os(ENV).is_none() {
        eprintln!("{ENV} is not set: no trace to benchmark (set it to e.g. /work/bench/big.data)");
    }
    divan::main();
}

fn path() -> Option<String> {
    std::env::var(ENV).ok()
}

/// What `schedscope tui` decodes: the events the report's sections read
/// (the CLI's `report::load_options(&Sections::all())`).
fn load_options() -> schedscope_parser::LoadOptions {
    let all = Sections::all();
    schedscope_parser::LoadOptions {
        keep: all
            .needed_events()
            .map(|names| names.iter().map(|n| n.to_string()).collect()),
        spare: all.need_timeline(),
        raw_fields: false,
        tally: all.tallied_events().iter().map(|n| n.to_string()).collect(),
    }
}

fn decode(p: &str) -> Result<Trace, schedscope_parser::ParseError> {
    schedscope_parser::load_with(std::path::Path::new(p), &load_options())
}

fn load() -> Option<Trace> {
    let p = path()?;
    match decode(&p) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("{e}");
            None
        }
    }
}

/// Decode, analyse, index and draw the first full frame.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn first_frame(bencher: divan::Bencher) {
    let Some(p) = path() else { return };
    bencher.bench(|| {
        let Ok(trace) = decode(&p) else {
            return;
        };
        let data = Data::from_trace(trace, &|_| {});
        let mut app = App::with_data(&p, data, false);
        let mut buf = Buffer::empty(AREA);
        schedscope_tui::draw::draw_buf(&mut buf, AREA, &mut app);
        divan::black_box(&buf);
    });
}

/// The first round's path, for comparison under the same load: a full
/// decode, and the timeline built twice (once for the lanes, once inside
/// the report), the lanes beside the analyses (no event overlays).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn first_frame_round1(bencher: divan::Bencher) {
    let Some(p) = path() else { return };
    bencher.bench(|| {
        let Ok(trace) = schedscope_parser::load(std::path::Path::new(&p)) else {
            return;
        };
        let (tl, report) = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let tl = Timeline::build(&trace);
                let lanes = schedscope_tui::index::Lanes::build(&tl);
                (tl, lanes)
            });
            let report = Report::compute(&trace, Sections::all(), &Options::default());
            (h.join(), report)
        });
        let Ok((tl, lanes)) = tl else { return };
        let data = Data::from_parts(tl, report, lanes);
        let mut app = App::with_data(&p, data, false);
        let mut buf = Buffer::empty(AREA);
        schedscope_tui::draw::draw_buf(&mut buf, AREA, &mut app);
        divan::black_box(&buf);
    });
}

fn data_1x() -> Option<&'static (Data, Data)> {
    static D: OnceLock<Option<(Data, Data)>> = OnceLock::new();
    D.get_or_init(|| {
        let trace = load()?;
        let report = Report::compute(&trace, Sections::default(), &Options::default());
        let one = Data::from_trace(trace, &|_| {});
        let tiled = Data::new(tile(&one.timeline, 10), report);
        Some((one, tiled))
    })
    .as_ref()
}

/// `tl` repeated `n` times back to back in time.
fn tile(tl: &Timeline, n: u64) -> Timeline {
    let span = tl.end.0 - tl.start.0 + 1;
    let shift_iv = |iv: &StateInterval, k: u64| StateInterval {
        ts: Ts(iv.ts.0 + k * span),
        end: Some(Ts(iv.end_or(tl.end).0 + k * span)),
        ..*iv
    };
    let threads = tl
        .threads
        .iter()
        .map(|th| {
            let v: Vec<StateInterval> = (0..n)
                .flat_map(|k| th.intervals.iter().map(move |iv| shift_iv(iv, k)))
                .collect();
            schedscope_analysis::ThreadTimeline {
                intervals: Intervals::from(v),
                ..th.clone()
            }
        })
        .collect();
    let cpus = tl
        .cpus
        .iter()
        .map(|runs| {
            (0..n)
                .flat_map(|k| {
                    runs.iter().map(move |r| CpuRun {
                        ts: Ts(r.ts.0 + k * span),
                        end: Some(Ts(r.end.unwrap_or(tl.end).0 + k * span)),
                        tid: r.tid,
                    })
                })
                .collect()
        })
        .collect();
    // (same threads in the same order: the timeline's tid index still fits)
    let mut out = tl.clone();
    out.threads = threads;
    out.cpus = cpus;
    out.end = Ts(tl.start.0 + n * span - 1);
    out
}

/// Zoom factors: whole trace down to 1/65536 of it.
const ZOOMS: [u32; 5] = [1, 16, 256, 4096, 65536];

fn redraw(bencher: divan::Bencher, data: &'static Data, zoom: u32) {
    let mut app = App::with_data("bench", clone_view(data), false);
    app.view.cursor = app.view.lo + (app.view.hi - app.view.lo) / 3;
    app.view.zoom(1.0 / f64::from(zoom));
    let mut buf = Buffer::empty(AREA);
    bencher.bench_local(|| {
        // a pan per frame: every frame draws new columns
        app.view.pan(0.01);
        schedscope_tui::draw::draw_buf(&mut buf, AREA, &mut app);
        divan::black_box(&buf);
    });
}

/// The app owns its data; the benchmarks share one load, so they get a
/// cheap stand-in that borrows nothing: rebuild from the same timeline.
fn clone_view(d: &Data) -> Data {
    let empty = Trace::new("bench", TraceFormat::PerfData);
    Data::new(
        d.timeline.clone(),
        Report::compute(&empty, Sections::default(), &Options::default()),
    )
}

/// Per redraw (with a 1% pan) of the benchmark file, at several zooms.
#[divan::bench(args = ZOOMS, sample_count = 20)]
fn redraw_1x(bencher: divan::Bencher, zoom: u32) {
    let Some((one, _)) = data_1x() else { return };
    redraw(bencher, one, zoom);
}

/// Per redraw of the 10x timeline, at several zooms.
#[divan::bench(args = ZOOMS, sample_count = 20)]
fn redraw_10x(bencher: divan::Bencher, zoom: u32) {
    let Some((_, ten)) = data_1x() else { return };
    redraw(bencher, ten, zoom);
}
