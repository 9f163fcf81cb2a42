//! The lane cache through the background job: a first open writes it, a
//! second open sends the lanes from it before the full load, and they draw
//! the same screen as the fresh load (the oracle); a damaged cache is
//! ignored and rewritten; without a cache nothing is written.

mod common;

use common::*;
use ratatui::buffer::Buffer;
use schedscope_tui::data::{holds_runs, spawn, LoadMsg};
use schedscope_tui::index::Lanes;
use schedscope_tui::{App, CacheUse, Data, Loader};
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../../fixtures/{rel}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn loader(path: &Path) -> Loader {
    let path = path.to_path_buf();
    Box::new(move |decoded| {
        schedscope_parser::load_with_progress(&path, &Default::default(), decoded)
            .map_err(|e| e.to_string())
    })
}

/// A private cache directory and a copy of `rel` in it.
fn setup(tag: &str, rel: &str) -> (PathBuf, CacheUse) {
    let root =
        std::env::temp_dir().join(format!("schedscope-tui-cache-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let trace = root.join(Path::new(rel).file_name().unwrap());
    std::fs::copy(fixture(rel), &trace).unwrap();
    let c = CacheUse {
        trace,
        dir: root.join("cache"),
    };
    (root, c)
}

/// Every message of one open, to the end of the job (the cache is written
/// when the channel closes).
fn open(c: &CacheUse, cache: bool) -> Vec<LoadMsg> {
    let job = spawn(loader(&c.trace), cache.then(|| c.clone()));
    let msgs = job.rx.iter().collect();
    job.thread.join().unwrap();
    msgs
}

fn cached(msgs: &mut Vec<LoadMsg>) -> Option<Box<Data>> {
    let i = msgs.iter().position(|m| matches!(m, LoadMsg::Cached(_)))?;
    match msgs.remove(i) {
        LoadMsg::Cached(d) => Some(d),
        _ => None,
    }
}

fn done(msgs: Vec<LoadMsg>) -> Box<Data> {
    msgs.into_iter()
        .find_map(|m| match m {
            LoadMsg::Done(d) => Some(d),
            _ => None,
        })
        .expect("the load finished")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

/// The screen rows but the last two (detail and status lines, which say
/// where the data came from).
fn lane_rows(b: &Buffer) -> Vec<String> {
    let (w, h) = (b.area.width, b.area.height);
    (0..h - 2)
        .map(|y| (0..w).map(|x| b[(x, y)].symbol()).collect())
        .collect()
}

#[test]
fn a_second_open_draws_the_lanes_from_the_cache_first() {
    let (root, c) = setup("second", "idle/hackbench.data");
    let mut first = open(&c, true);
    assert!(cached(&mut first).is_none(), "no cache yet");
    let fresh = done(first);
    assert_eq!(files(&c.dir).len(), 1, "the first open wrote the cache");

    let mut second = open(&c, true);
    let lanes = cached(&mut second).expect("the second open reads the cache");
    assert!(lanes.from_cache);
    // it comes before the full load's result
    assert!(matches!(second.last(), Some(LoadMsg::Done(_))));
    let full = done(second);
    assert!(!full.from_cache);

    // the oracle: the fresh load's screen, whole trace and zoomed in,
    // colour and without, with the wait strips and the latency,
    // preemption and wasted-idle overlays
    for no_color in [false, true] {
        let mut want = App::with_data("h", *fresh_copy(&c), no_color);
        let mut got = App::new("h", 0, no_color);
        got.on_load(LoadMsg::Phase("decoding"));
        got.on_load(LoadMsg::Cached(from_cache(&c)));
        for keys_ in ["", "++++", "+++++++++lll", "wei", "jjsf", "0"] {
            keys(&mut want, keys_);
            keys(&mut got, keys_);
            let (w, g) = (buffer(&mut want, 160, 40), buffer(&mut got, 160, 40));
            assert_eq!(lane_rows(&g), lane_rows(&w), "after {keys_:?}");
            if !no_color {
                for y in 0..38 {
                    for x in 0..160 {
                        assert_eq!(g[(x, y)].fg, w[(x, y)].fg, "({x},{y}) after {keys_:?}");
                    }
                }
            }
            let status = screen(&mut got, 160, 40).pop().unwrap();
            assert!(
                status.contains("lanes from cache, loading: decoding"),
                "{status}"
            );
        }
        // the full load replaces the lanes and keeps the view
        let view = (got.view.start, got.view.width);
        got.on_load(LoadMsg::Done(fresh_copy(&c)));
        assert!(!got.data().unwrap().from_cache);
        assert_eq!((got.view.start, got.view.width), view);
        let status = screen(&mut got, 160, 40).pop().unwrap();
        assert!(!status.contains("lanes from cache"), "{status}");
    }
    assert_eq!(fresh.report.trace.events, lanes.report.trace.events);
    std::fs::remove_dir_all(root).unwrap();
}

/// The lanes in the test's cache, as the background job sends them.
fn from_cache(c: &CacheUse) -> Box<Data> {
    let key = schedscope_tui::cache::Key::of(&c.trace).unwrap();
    let (meta, lanes) = schedscope_tui::cache::load(&c.dir, &key).expect("a hit");
    Box::new(Data::from_cache(meta, lanes))
}

/// A fresh load of the test's trace (the oracle's data).
fn fresh_copy(c: &CacheUse) -> Box<Data> {
    let t = schedscope_parser::load(&c.trace).unwrap();
    Box::new(Data::from_trace(t, &|_| {}))
}

#[test]
fn while_only_cached_lanes_are_shown_what_needs_the_load_says_so() {
    let (root, c) = setup("waits", "sim/mixed-s1.data");
    let _ = open(&c, true);
    let mut second = open(&c, true);
    let lanes = cached(&mut second).expect("a hit");
    let mut app = App::new("m", 0, true);
    app.on_load(LoadMsg::Phase("decoding"));
    app.on_load(LoadMsg::Cached(lanes));
    keys(&mut app, "n");
    assert!(app.message.contains("still loading"), "{}", app.message);
    // marks are kept, their region computed once the load is done
    keys(&mut app, "a");
    app.view.cursor = app.view.lo + app.view.width / 2;
    keys(&mut app, "b");
    assert!(app.region.is_none());
    keys(&mut app, "3");
    let s = screen(&mut app, 120, 20);
    assert!(s[1].contains("analyses are still loading"), "{}", s[1]);
    app.on_load(LoadMsg::Phase("analysing"));
    let status = screen(&mut app, 120, 20).pop().unwrap();
    assert!(status.contains("loading: analysing"), "{status}");
    app.on_load(LoadMsg::Done(done(second)));
    assert!(app.region.is_some());
    let s = screen(&mut app, 120, 20);
    assert!(!s[1].contains("still loading"), "{}", s[1]);
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_damaged_cache_is_ignored_and_rewritten() {
    let (root, c) = setup("damaged", "sim/bare-metal-s1.data");
    let _ = open(&c, true);
    let file = files(&c.dir).pop().expect("written");
    let good = std::fs::read(&file).unwrap();
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x10;
    for damaged in [bad, good[..good.len() - 7].to_vec(), Vec::new()] {
        std::fs::write(&file, &damaged).unwrap();
        let mut msgs = open(&c, true);
        assert!(cached(&mut msgs).is_none(), "a damaged cache is not shown");
        assert!(!done(msgs).from_cache);
        assert_eq!(std::fs::read(&file).unwrap(), good, "rewritten");
    }
    // a changed trace (another mtime) is a miss, and gets its own cache
    let f = std::fs::File::options().write(true).open(&c.trace).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    drop(f);
    let mut msgs = open(&c, true);
    assert!(cached(&mut msgs).is_none(), "a stale cache is not shown");
    let mut msgs = open(&c, true);
    assert!(cached(&mut msgs).is_some(), "the rewritten cache is");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn without_a_cache_nothing_is_read_or_written() {
    let (root, c) = setup("none", "sim/bare-metal-s1.data");
    let mut msgs = open(&c, false);
    assert!(cached(&mut msgs).is_none());
    assert!(!done(msgs).from_cache);
    assert!(files(&c.dir).is_empty());
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_second_open_takes_the_cached_lanes_as_its_own() {
    let (root, c) = setup("reuse", "sim/mixed-s1.data");
    let fresh = done(open(&c, true));
    let mut second = open(&c, true);
    let lanes = cached(&mut second).expect("a hit");
    let full = done(second);
    // not built again: the very lanes drawn from the cache, which are
    // what the timeline builds
    assert!(std::sync::Arc::ptr_eq(&lanes.lanes, &full.lanes));
    assert_eq!(*full.lanes, Lanes::build(&full.timeline));
    assert!(holds_runs(&full.lanes, &full.timeline));
    // another trace's lanes are not taken
    let other = fixture_app("sim/bare-metal-s1.data");
    assert!(!holds_runs(&fresh.lanes, &other.data().unwrap().timeline));
    std::fs::remove_dir_all(root).unwrap();
}
