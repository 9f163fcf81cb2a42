//! TUI frame costs on real recordings: time to first frame (decode,
//! timeline, analyses, lane index, first draw) and per redraw at several
//! zoom levels, on the benchmark file and on a file 10x larger.
//!
//! The files come from `SCHEDSCOPE_TUI_BENCH_FILE` (e.g.
//! `big.data` of `scripts/bench-vs-perf.sh`, 1.75 M events) and `SCHEDSCOPE_TUI_BENCH_FILE_10X`
//! (e.g. `big10.data`: the same `perf record` command with
//! `perf bench sched messaging -g 20 -l 15000`, ten times the loops); a
//! benchmark whose file is not set says so and measures nothing. Run:
//! `SCHEDSCOPE_TUI_BENCH_FILE=big.data SCHEDSCOPE_TUI_BENCH_FILE_10X=big10.data cargo bench -p schedscope-tui --bench frame`.
//! Targets (issue 12): first frame under 1 s on the benchmark file, every
//! redraw under 16 ms on both; `first_frame_cached*` (issue 21): the
//! first frame of a second open, from the lane cache, under 1 s on both.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use schedscope_analysis::{Options, Report, Sections, Timeline};
use schedscope_trace::Trace;
use schedscope_tui::view::Viewport;
use schedscope_tui::{App, Data};
use std::sync::{Mutex, OnceLock};

const ENV: &str = "SCHEDSCOPE_TUI_BENCH_FILE";
const ENV_10X: &str = "SCHEDSCOPE_TUI_BENCH_FILE_10X";
const AREA: Rect = Rect {
    x: 0,
    y: 0,
    width: 200,
    height: 50,
};

fn main() {
    if std::env::var_os(ENV).is_none() {
        eprintln!("{ENV} is not set: no trace to benchmark (set it to a perf.data file, e.g. the one scripts/bench-vs-perf.sh records)");
    }
    if std::env::var_os(ENV_10X).is_none() {
        eprintln!("{ENV_10X} is not set: the 10x benchmarks measure nothing");
    }
    divan::main();
}

fn path() -> Option<String> {
    std::env::var(ENV).ok()
}

fn path_10x() -> Option<String> {
    std::env::var(ENV_10X).ok()
}

/// What `schedscope tui` decodes: the events the report's sections read
/// (the CLI's `report::load_options(&Sections::all())`), with the fields
/// of untyped events for the events pane.
fn load_options() -> schedscope_parser::LoadOptions {
    let all = Sections::all();
    schedscope_parser::LoadOptions {
        keep: all
            .needed_events()
            .map(|names| names.iter().map(|n| n.to_string()).collect()),
        spare: all.need_timeline(),
        raw_fields: true,
        tally: all.tallied_events().iter().map(|n| n.to_string()).collect(),
    }
}

fn decode(p: &str) -> Result<Trace, schedscope_parser::ParseError> {
    schedscope_parser::load_with(std::path::Path::new(p), &load_options())
}

fn load(p: Option<String>) -> Option<Trace> {
    let p = p?;
    match decode(&p) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("{e}");
            None
        }
    }
}

/// Decode, analyse, index and draw the first full frame of `p`.
fn first(bencher: divan::Bencher, p: Option<String>) {
    let Some(p) = p else { return };
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

/// First full frame of the benchmark file.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn first_frame(bencher: divan::Bencher) {
    first(bencher, path());
}

/// First full frame of the 10x file.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn first_frame_10x(bencher: divan::Bencher) {
    first(bencher, path_10x());
}

/// A lane cache of `p` in a private directory, written once from a full
/// load (not timed): the directory and the trace's key.
fn cache_of(p: &str) -> Option<(std::path::PathBuf, schedscope_tui::cache::Key)> {
    let dir = std::env::temp_dir().join(format!("schedscope-frame-bench-{}", std::process::id()));
    let key = schedscope_tui::cache::Key::of(std::path::Path::new(p))?;
    if schedscope_tui::cache::load(&dir, &key).is_none() {
        let data = Data::from_trace(decode(p).ok()?, &|_| {});
        let bytes = schedscope_tui::cache::encode(&key, &data.cache_meta(), &data.lanes);
        schedscope_tui::cache::store(&dir, &key, &bytes).ok()?;
    }
    Some((dir, key))
}

/// The first frame of a second open: the trace's key (its head read and
/// hashed), the lanes read from the lane cache, drawn.
fn first_cached(bencher: divan::Bencher, p: Option<String>) {
    let Some(p) = p else { return };
    let Some((dir, _)) = cache_of(&p) else {
        return;
    };
    bencher.bench(|| {
        let key = schedscope_tui::cache::Key::of(std::path::Path::new(&p));
        let Some((meta, lanes)) = key.and_then(|k| schedscope_tui::cache::load(&dir, &k)) else {
            return;
        };
        let mut app = App::with_data(&p, Data::from_cache(meta, lanes), false);
        let mut buf = Buffer::empty(AREA);
        schedscope_tui::draw::draw_buf(&mut buf, AREA, &mut app);
        divan::black_box(&buf);
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// First frame of a second open of the benchmark file (lane cache).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn first_frame_cached(bencher: divan::Bencher) {
    first_cached(bencher, path());
}

/// First frame of a second open of the 10x file (lane cache).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn first_frame_cached_10x(bencher: divan::Bencher) {
    first_cached(bencher, path_10x());
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

/// The app on the analysed benchmark file, loaded once for the redraw
/// benchmarks (each sets its own view).
fn app_1x() -> Option<&'static Mutex<App>> {
    static A: OnceLock<Option<Mutex<App>>> = OnceLock::new();
    A.get_or_init(|| app_of(path())).as_ref()
}

/// The same on the 10x file.
fn app_10x() -> Option<&'static Mutex<App>> {
    static A: OnceLock<Option<Mutex<App>>> = OnceLock::new();
    A.get_or_init(|| app_of(path_10x())).as_ref()
}

fn app_of(p: Option<String>) -> Option<Mutex<App>> {
    let p = p?;
    let data = Data::from_trace(load(Some(p.clone()))?, &|_| {});
    Some(Mutex::new(App::with_data(&p, data, false)))
}

/// Zoom factors: whole trace down to 1/655360 of it (about 30 us of the
/// 10x file: a handful of runs per column).
const ZOOMS: [u32; 6] = [1, 16, 256, 4096, 65536, 655360];

fn redraw(bencher: divan::Bencher, app: &Mutex<App>, zoom: u32) {
    let Ok(mut app) = app.lock() else { return };
    let (lo, hi) = (app.view.lo, app.view.hi);
    app.view = Viewport::new(lo, hi);
    app.view.cursor = lo + (hi - lo) / 3;
    app.view.zoom(1.0 / f64::from(zoom));
    let mut buf = Buffer::empty(AREA);
    bencher.bench_local(|| {
        // a pan per frame: every frame draws new columns
        app.view.pan(0.01);
        schedscope_tui::draw::draw_buf(&mut buf, AREA, &mut app);
        divan::black_box(&buf);
    });
}

/// Per redraw (with a 1% pan) of the benchmark file, at several zooms.
#[divan::bench(args = ZOOMS, sample_count = 20)]
fn redraw_1x(bencher: divan::Bencher, zoom: u32) {
    let Some(app) = app_1x() else { return };
    redraw(bencher, app, zoom);
}

/// Per redraw of the 10x file, at several zooms.
#[divan::bench(args = ZOOMS, sample_count = 20)]
fn redraw_10x(bencher: divan::Bencher, zoom: u32) {
    let Some(app) = app_10x() else { return };
    redraw(bencher, app, zoom);
}
