//! `schedscope tui` in a real terminal: tmux runs it on a simulator
//! fixture (a bare PTY cannot answer crossterm's cursor query), keys go in
//! with send-keys, and capture-pane shows what a user sees. Skips, saying
//! why, when tmux is missing.

use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux session, killed when dropped, and its lane cache directory,
/// then removed.
struct Session {
    name: String,
    cache: std::path::PathBuf,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

impl Session {
    fn kill(&self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }

    fn send(&self, keys: &[&str]) {
        let st = Command::new("tmux")
            .args(["send-keys", "-t", &self.name])
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(st.success());
    }

    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn flag(&self, name: &str) -> String {
        let out = Command::new("tmux")
            .args([
                "display-message",
                "-p",
                "-t",
                &self.name,
                &format!("#{{{name}}}"),
            ])
            .output()
            .expect("tmux display-message");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Wait until the screen satisfies `pred` (20 s at most: the machine
    /// may be loaded by builds).
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.capture();
            if pred(&s) {
                return s;
            }
            if t0.elapsed() > Duration::from_secs(20) {
                panic!("screen never showed {what}:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The cache directory (`XDG_CACHE_HOME`) of the sessions named after
/// `tag`: a private one, so that no test reads or fills the user's lane
/// cache (removed when the session is dropped).
fn cache_home(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("schedscope-tui-{tag}-{}-cache", std::process::id()))
}

/// Start `script` in a detached `w` x `h` tmux session named after `tag`
/// (with its own [`cache_home`]); None (with the reason printed) when tmux
/// is missing.
fn start(tag: &str, w: u16, h: u16, script: &str) -> Option<Session> {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED: tmux is not installed (scripts/setup.sh installs it)");
        return None;
    }
    let name = format!("schedscope-tui-{tag}-{}", std::process::id());
    let xdg = format!("XDG_CACHE_HOME={}", cache_home(tag).display());
    let st = Command::new("tmux")
        .args(["new-session", "-d", "-s", &name, "-e", &xdg])
        .args(["-x", &w.to_string(), "-y", &h.to_string(), script])
        .env_remove("NO_COLOR")
        .status()
        .expect("tmux new-session");
    assert!(st.success());
    Some(Session {
        name,
        cache: cache_home(tag),
    })
}

#[test]
fn tui_in_tmux_zoom_pan_markers_tabs_search_quit() {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/sim/bare-metal-s1.data"
    );
    // the shell records the exit status and whether the tty modes came back
    let script = format!(
        "S0=$(stty -g); '{bin}' tui '{fixture}'; echo EXIT=$?; \
         [ \"$(stty -g)\" = \"$S0\" ] && echo TTY=restored; echo DONE; sleep 30"
    );
    let Some(s) = start("test", 120, 40, &script) else {
        return;
    };

    let screen = s.wait_for("the CPU lanes", |s| {
        s.contains("\nCPU0 ") && s.contains("\nCPU1 ")
    });
    assert!(screen.contains("360 events 2 CPUs"), "{screen}");
    assert!(screen.contains("zoom x1.0"), "{screen}");
    assert!(screen.contains("time    |0.00s"), "{screen}");
    assert_eq!(s.flag("alternate_on"), "1");
    assert_eq!(s.flag("mouse_any_flag"), "1");

    s.send(&["+"]);
    s.wait_for("zoom x2.0", |s| s.contains("zoom x2.0"));
    s.send(&["End", "a"]);
    let before = s.wait_for("the window moved to the end", |s| s.contains("at +0.02"));
    s.send(&["h"]);
    s.wait_for("a pan to the left", |s| {
        s != before && s.contains("at +0.02")
    });
    s.send(&["0", "g", "b"]);
    // (the whole pane: a capture can catch a frame half written)
    let screen = s.wait_for("the region pane", |s| {
        s.contains("Region A-B") && s.contains("wasted idle")
    });
    // A at the last nanosecond, B at the first: the whole trace
    assert!(screen.contains("Region A-B 49.931 ms"), "{screen}");
    assert!(screen.contains("wasted idle"), "{screen}");

    s.send(&["3"]);
    let screen = s.wait_for("the gang tab", |s| s.contains("2 gangs"));
    assert!(screen.contains("process 5000 (worker-p0)"), "{screen}");
    assert!(screen.contains("36.939"), "{screen}");
    s.send(&["Enter"]);
    s.wait_for("the jump", |s| {
        s.contains("jumped to the longest fragmented episode of process 5000")
    });

    s.send(&["/", "worker-p1", "Enter"]);
    s.wait_for("the search result", |s| {
        s.contains("3 task(s) match 'worker-p1'")
    });

    s.send(&["q"]);
    let screen = s.wait_for("the exit", |s| s.contains("\nDONE"));
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(screen.contains("TTY=restored"), "{screen}");
    assert_eq!(s.flag("alternate_on"), "0", "alternate screen left");
    assert_eq!(s.flag("mouse_any_flag"), "0", "mouse capture off");
}

/// The CPU lane rows (and their wait strips) of a screen, not the detail
/// line (`CPU0 @...`).
fn lanes(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|l| (l.starts_with("CPU") && !l.contains(" @")) || l.starts_with(" wait"))
        .collect()
}

#[test]
fn tui_in_tmux_a_second_open_draws_the_lanes_from_the_cache() {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/sim/bare-metal-s1.data"
    );
    let dir = cache_home("cache").join("schedscope/tui");
    let _ = std::fs::remove_dir_all(&dir);
    let Some(s) = start(
        "cache",
        120,
        30,
        &format!("'{bin}' tui '{fixture}'; sleep 30"),
    ) else {
        return;
    };
    let first = s.wait_for("the CPU lanes", |s| s.contains("360 events 2 CPUs"));
    s.send(&["q"]);
    // killed, not dropped: the next session reads the cache it wrote
    s.kill();
    let written = || std::fs::read_dir(&dir).map_or(0, |d| d.count());
    let t0 = Instant::now();
    while written() == 0 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        written(),
        1,
        "the first open wrote the lane cache in {dir:?}"
    );

    // the second open, its full load held back (a test-only variable): the
    // lanes on screen can only come from the cache, and they are the
    // first open's
    let held =
        format!("SCHEDSCOPE_TUI_TEST_HOLD_LOAD=1 '{bin}' tui '{fixture}'; echo EXIT=$?; sleep 30");
    let Some(s) = start("cache", 120, 30, &held) else {
        return;
    };
    let second = s.wait_for("the cached lanes", |s| s.contains("lanes from cache"));
    assert!(
        second.contains("lanes from cache, loading: decoding"),
        "{second}"
    );
    assert!(second.contains("360 events 2 CPUs"), "{second}");
    assert_eq!(lanes(&second), lanes(&first), "{second}");
    assert_eq!(lanes(&first).len(), 4, "{first}");
    s.send(&["3"]);
    s.wait_for("the tab's note", |s| {
        s.contains("analyses are still loading")
    });
    s.send(&["q"]);
    let screen = s.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=0"), "{screen}");
    s.kill();

    // --no-cache: no lanes while the load is held
    let held = format!(
        "SCHEDSCOPE_TUI_TEST_HOLD_LOAD=1 '{bin}' tui --no-cache '{fixture}'; echo EXIT=$?; sleep 30"
    );
    let Some(s) = start("cache", 120, 30, &held) else {
        return;
    };
    let screen = s.wait_for("the loading screen", |s| s.contains("decoding..."));
    std::thread::sleep(Duration::from_millis(500));
    let screen = format!("{screen}{}", s.capture());
    assert!(lanes(&screen).is_empty(), "{screen}");
    s.send(&["q"]);
    s.wait_for("the exit", |s| s.contains("EXIT=0"));
}

#[test]
fn tui_in_tmux_a_first_open_draws_a_preview_before_the_analyses() {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/sim/bare-metal-s1.data"
    );
    // the load held back once the file is decoded (a test-only variable):
    // lanes on screen can only be the preview of the streamed events
    let held = format!(
        "SCHEDSCOPE_TUI_TEST_HOLD_ANALYSES=1 '{bin}' tui --no-cache '{fixture}'; \
         echo EXIT=$?; sleep 30"
    );
    let Some(s) = start("preview", 200, 30, &held) else {
        return;
    };
    let screen = s.wait_for("the preview", |s| {
        s.contains("preview (recorded switches only)")
    });
    assert!(
        screen.contains("preview (recorded switches only), loading: decoding"),
        "{screen}"
    );
    assert!(screen.contains("360 events 2 CPUs"), "{screen}");
    let rows = lanes(&screen);
    for cpu in ["CPU0", "CPU1"] {
        assert!(rows.iter().any(|l| l.starts_with(cpu)), "{screen}");
    }
    s.send(&["3"]);
    s.wait_for("the tab's note", |s| {
        s.contains("the timeline's lanes are a preview")
    });
    s.send(&["q"]);
    let screen = s.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=0"), "{screen}");
}

#[test]
fn tui_in_tmux_events_pane_prints_every_field_of_untyped_events() {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/perf/stat_runtime.data"
    );
    // the fixture's first event, as `perf script` prints it (the stored
    // stat_runtime.script.txt): the TUI loads untyped events' fields, so
    // the pane has sched_stat_runtime's comm, which the typed model lacks
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/perf/stat_runtime.script.txt"
    ))
    .expect("stored perf script output");
    let first = script.lines().next().expect("a line");
    let payload = first
        .split_once("sched:sched_stat_runtime: ")
        .expect("the first event is a sched_stat_runtime")
        .1
        .trim_end_matches(" [ns]");
    assert!(payload.starts_with("comm="), "{payload}");
    let cmd = format!("'{bin}' tui '{fixture}'; sleep 30");
    let Some(s) = start("fields", 160, 30, &cmd) else {
        return;
    };
    s.wait_for("the CPU lanes", |s| s.contains("\nCPU0 "));
    s.send(&["d"]);
    let screen = s.wait_for("the events pane", |s| s.contains("events on CPU0"));
    assert!(
        screen.contains(&format!("sched:sched_stat_runtime: {payload}")),
        "{payload}:\n{screen}"
    );
    s.send(&["q"]);
}

#[test]
fn tui_in_tmux_restores_the_terminal_after_a_panic_in_the_draw_loop() {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/sim/bare-metal-s1.data"
    );
    // the test-only variable makes the first frame with the trace panic
    let script = format!(
        "S0=$(stty -g); SCHEDSCOPE_TUI_TEST_PANIC=1 '{bin}' tui '{fixture}' 2>/tmp/$$.err; \
         echo EXIT=$?; grep -c 'panic inside the draw loop' /tmp/$$.err | sed 's/^/PANICMSG=/'; \
         rm -f /tmp/$$.err; [ \"$(stty -g)\" = \"$S0\" ] && echo TTY=restored; echo DONE; sleep 30"
    );
    let Some(s) = start("panic", 100, 30, &script) else {
        return;
    };
    let screen = s.wait_for("the exit", |s| s.contains("\nDONE"));
    // Rust's exit status for a panic in the main thread
    assert!(screen.contains("EXIT=101"), "{screen}");
    assert!(
        screen.contains("PANICMSG=1"),
        "the panic message is printed:\n{screen}"
    );
    assert!(
        screen.contains("TTY=restored"),
        "raw mode left on:\n{screen}"
    );
    assert_eq!(s.flag("alternate_on"), "0", "alternate screen left");
    assert_eq!(s.flag("mouse_any_flag"), "0", "mouse capture left on");
    assert_eq!(s.flag("cursor_flag"), "1", "cursor left hidden");
}

#[test]
fn tui_in_tmux_shows_a_decoding_error_and_exits_1() {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let dir = std::env::temp_dir().join(format!("schedscope-tui-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.data");
    std::fs::write(
        &bad,
        b"PERFILE2 this is not a perf.data file at all, only text",
    )
    .unwrap();
    let script = format!("'{bin}' tui '{}'; echo EXIT=$?; sleep 30", bad.display());
    let Some(s) = start("bad", 100, 20, &script) else {
        return;
    };
    let screen = s.wait_for("the error", |s| s.contains("error: "));
    assert!(
        screen.contains("bad.data"),
        "the error names the file:\n{screen}"
    );
    s.send(&["q"]);
    let screen = s.wait_for("the exit", |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(
        screen.contains("schedscope: "),
        "the error is printed again after the screen is restored:\n{screen}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tui_without_a_terminal_or_file_says_why() {
    let bin = env!("CARGO_BIN_EXE_schedscope");
    let out = Command::new(bin)
        .args(["tui", "/nonexistent/x.data"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/x.data: No such file"), "{err}");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/sim/bare-metal-s1.data"
    );
    let out = Command::new(bin).args(["tui", fixture]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tui needs a terminal"));
}
