//! The first open's preview in the app: the lanes of the recorded
//! switches decoded so far, marked as a preview with how much is loaded,
//! replaced by the full data, never shown over cached lanes or the full
//! data.

mod common;

use common::*;
use schedscope_tui::data::{LoadMsg, Progress};
use schedscope_tui::preview::{self, Preview};
use schedscope_tui::{App, Data};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::channel;
use std::sync::Arc;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../../fixtures/{rel}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// The preview of `rel` once streamed, its full data, and the progress.
fn preview_and_full(rel: &str) -> (Box<Data>, Box<Data>, Arc<Progress>) {
    let (tx, rx) = channel();
    let progress = Arc::new(Progress::default());
    let mut p = Preview::new(tx, Arc::clone(&progress));
    let trace = preview::load(
        &fixture(rel),
        &Default::default(),
        &progress.decoded,
        &mut p,
    )
    .expect("loads");
    p.show_now();
    let Ok(LoadMsg::Preview(d)) = rx.try_recv() else {
        panic!("a preview");
    };
    (d, Box::new(Data::from_trace(trace, &|_| {})), progress)
}

#[test]
fn the_preview_says_what_it_is_and_how_much_is_loaded() {
    let rel = "sim/mixed-s1.data";
    let (pre, full, progress) = preview_and_full(rel);
    let size = std::fs::metadata(fixture(rel)).unwrap().len();
    let mut app = App::new("m", size, false);
    app.progress = Some(Arc::clone(&progress));
    app.on_load(LoadMsg::Phase("decoding"));
    // as the status line reads it while a quarter is decoded
    progress.decoded.store(size / 4, Ordering::Relaxed);
    progress.streamed.store(1_234_567, Ordering::Relaxed);
    app.on_load(LoadMsg::Preview(pre));
    let lines = screen(&mut app, 160, 40);
    let status = lines.last().unwrap();
    assert!(
        status.contains(&format!(
            "preview (recorded switches only), loading: decoding 25% of {:.1} MB, 1.2 M events",
            size as f64 / 1e6
        )),
        "{status}"
    );
    assert!(lines.iter().any(|l| l.starts_with("CPU0")), "{lines:#?}");

    // what needs the full load says so
    keys(&mut app, "3");
    let lines = screen(&mut app, 160, 40);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("analyses are still loading (the timeline's lanes are a preview)")),
        "{lines:#?}"
    );
    keys(&mut app, "1n");
    assert!(
        app.message
            .contains("still loading (the lanes are a preview)"),
        "{}",
        app.message
    );

    // the full data replaces it and keeps the window looked at
    keys(&mut app, "++l");
    let (start, width) = (app.view.start, app.view.width);
    app.on_load(LoadMsg::Done(full));
    assert!(!app.data().unwrap().lanes_only());
    assert_eq!((app.view.start, app.view.width), (start, width));
    let status = screen(&mut app, 160, 40).pop().unwrap();
    assert!(!status.contains("preview"), "{status}");
}

#[test]
fn a_preview_never_replaces_cached_lanes_or_the_full_data() {
    let rel = "sim/bare-metal-s1.data";
    let (pre, full, _) = preview_and_full(rel);
    let (pre2, _, _) = preview_and_full(rel);
    let mut app = App::new("b", 0, false);
    app.on_load(LoadMsg::Phase("decoding"));
    app.on_load(LoadMsg::Done(full));
    app.on_load(LoadMsg::Preview(pre));
    assert!(!app.data().unwrap().lanes_only());

    let mut app = App::new("b", 0, false);
    let mut cached = pre2;
    cached.preview = false;
    cached.from_cache = true;
    app.on_load(LoadMsg::Cached(cached));
    let (again, _, _) = preview_and_full(rel);
    app.on_load(LoadMsg::Preview(again));
    assert!(app.data().unwrap().from_cache);
}

#[test]
fn a_grown_preview_keeps_a_moved_window_and_follows_a_whole_one() {
    let rel = "sim/mixed-s1.data";
    let (pre, _, _) = preview_and_full(rel);
    let (lo, hi) = (pre.timeline.start.0, pre.timeline.end.0);
    let grown = |end: u64| {
        let (mut d, _, _) = preview_and_full(rel);
        d.timeline.end = schedscope_trace::Ts(end);
        d
    };
    let mut app = App::new("m", 0, false);
    app.on_load(LoadMsg::Phase("decoding"));
    app.on_load(LoadMsg::Preview(pre));
    assert_eq!((app.view.lo, app.view.hi), (lo, hi));
    // whole: the window follows the growing axis
    app.on_load(LoadMsg::Preview(grown(hi + 1000)));
    assert_eq!((app.view.start, app.view.width), (lo, hi + 1000 - lo));
    // zoomed in: the window stays
    keys(&mut app, "++");
    let (start, width) = (app.view.start, app.view.width);
    app.on_load(LoadMsg::Preview(grown(hi + 2000)));
    assert_eq!((app.view.start, app.view.width), (start, width));
    assert_eq!(app.view.hi, hi + 2000);
}

/// The preview knows tasks by tid, not by name: the cursor's line names
/// a task it has no comm for as `?`, not as an empty word.
#[test]
fn the_preview_names_a_task_without_comm_as_unknown() {
    let (pre, _, progress) = preview_and_full("sim/mixed-s1.data");
    let mut app = App::new("m", 1, false);
    app.progress = Some(progress);
    app.on_load(LoadMsg::Preview(pre));
    let lines = screen(&mut app, 160, 40);
    let line = lines
        .iter()
        .find(|l| l.contains(", most pid "))
        .unwrap_or_else(|| panic!("a cursor line naming the busiest task: {lines:#?}"));
    let after = line.split(", most pid ").nth(1).unwrap();
    let mut words = after.split(' ');
    let pid = words.next().unwrap();
    assert!(pid.parse::<u32>().is_ok(), "{line}");
    assert_eq!(words.next(), Some("?"), "{line}");
}
