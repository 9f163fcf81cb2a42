//! The event overlays (PLE exits, IPIs and TLB shootdowns, fragmented gang
//! episodes) drawn into ratatui's TestBackend, checked against the
//! fixtures' text form and truth files (counted here by plain text
//! matching, not by the decoder or the analyses).

mod common;

use common::*;
use schedscope_tui::app::Overlay;
use schedscope_tui::App;

/// Lane columns at width `W` (8 for the lane labels).
const W: u16 = 128;
const COLS: u16 = W - 8;

fn path(rel: &str) -> String {
    format!("{}/../../fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// `(cpu, ns)` of the lines of an ftrace text fixture whose event part
/// matches `pred` (`[CPU]` and `SECS.USECS:` fields as ftrace prints them).
fn text_events(rel: &str, pred: impl Fn(&str) -> bool) -> Vec<(usize, u64)> {
    let text = std::fs::read_to_string(path(rel)).expect("fixture text");
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(open) = line.find(") [") else {
            continue;
        };
        let rest = &line[open + 3..];
        let cpu: usize = rest[..3].parse().expect("cpu field");
        let after = rest[4..].trim_start();
        // flags, then the timestamp, then the event
        let Some((_flags, rest)) = after.split_once(' ') else {
            continue;
        };
        let Some((ts, event)) = rest.trim_start().split_once(' ') else {
            continue;
        };
        let ts = ts.trim_end_matches(':');
        if !pred(event) {
            continue;
        }
        let (s, us) = ts.split_once('.').expect("secs.usecs");
        let ns = s.parse::<u64>().unwrap() * 1_000_000_000 + us.parse::<u64>().unwrap() * 1000;
        out.push((cpu, ns));
    }
    out
}

/// The strip labelled `label` under lane `CPU{cpu}` in `s`.
fn strip<'a>(s: &'a [String], cpu: usize, label: &str) -> &'a str {
    let i = s
        .iter()
        .position(|l| l.starts_with(&format!("CPU{cpu} ")))
        .unwrap_or_else(|| panic!("lane CPU{cpu}:\n{}", s.join("\n")));
    let l = s[i + 1..]
        .iter()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("strip {label} under CPU{cpu}:\n{}", s.join("\n")));
    &l[8..]
}

fn digit(n: usize) -> char {
    match n {
        0 => ' ',
        1..=9 => char::from(b'0' + n as u8),
        _ => '+',
    }
}

/// The glyph of every column of `cpu`'s strip, from `events` (cpu, ns).
fn expected_counts(app: &App, events: &[(usize, u64)], cpu: usize) -> String {
    (0..COLS)
        .map(|i| {
            let (a, b) = app.view.col_range(i, COLS);
            digit(
                events
                    .iter()
                    .filter(|&&(c, t)| c == cpu && t >= a && t < b)
                    .count(),
            )
        })
        .collect()
}

#[test]
fn ple_strip_counts_the_pause_loop_exits_of_each_cpu() {
    // mixed-s1: VM 1000 (VMX, PAUSE_INSTRUCTION) and VM 1100 (SVM, pause)
    let ple = text_events("sim/mixed-s1.txt", |e| {
        e.starts_with("kvm_exit:")
            && (e.contains(" reason PAUSE_INSTRUCTION ") || e.contains(" reason pause "))
    });
    let truth = truth("sim/mixed-s1.truth.json");
    assert_eq!(
        ple.len() as u64,
        truth["ple"]["counts"][0].as_u64().unwrap()
    );
    let mut app = fixture_app("sim/mixed-s1.data");
    // wait strips off, PLE exits on
    keys(&mut app, "pv");
    let mut seen = 0;
    for zoom in [1.0, 1.0 / 64.0] {
        app.view.cursor = 1_000_000_000_000 + 20_000_000;
        app.view.zoom(zoom);
        let s = screen(&mut app, W, 20);
        for cpu in 0..4 {
            let got = strip(&s, cpu, " ple");
            let want = expected_counts(&app, &ple, cpu);
            assert_eq!(got, want, "CPU{cpu} at zoom {zoom}");
            seen += got.chars().filter(|c| *c != ' ').count();
        }
    }
    assert!(seen > 20, "the strips show exits ({seen} cells)");
    keys(&mut app, "v");
    let s = screen(&mut app, W, 20);
    assert!(!s.iter().any(|l| l.starts_with(" ple")));
}

#[test]
fn ipi_strip_counts_ipis_and_marks_tlb_shootdowns() {
    let rel = "tlb/tracefs-tlb.txt";
    let sent = |e: &str| {
        e.starts_with("ipi_send_cpu:")
            || e.starts_with("ipi_send_cpumask:")
            || e.starts_with("csd_queue_cpu:")
            || (e.starts_with("tlb_flush:") && e.ends_with("(1)"))
    };
    let all = text_events(rel, sent);
    let shootdowns = text_events(rel, |e| {
        (e.starts_with("csd_queue_cpu:") || e.starts_with("ipi_send_cpu"))
            && e.contains("func=flush_tlb_func")
            || e.contains("callback=flush_tlb_func")
            || (e.starts_with("tlb_flush:") && e.ends_with("(1)"))
    });
    assert!(shootdowns.len() > 10 && all.len() > shootdowns.len());
    let mut app = fixture_app(rel);
    keys(&mut app, "po");
    let mut t_cells = 0;
    for zoom in [1.0, 1.0 / 256.0] {
        app.view.cursor = shootdowns[shootdowns.len() / 2].1;
        app.view.zoom(zoom);
        let s = screen(&mut app, W, 14);
        for cpu in 0..2 {
            let got: Vec<char> = strip(&s, cpu, " ipi").chars().collect();
            let counts: Vec<char> = expected_counts(&app, &all, cpu).chars().collect();
            let flush: Vec<char> = expected_counts(&app, &shootdowns, cpu).chars().collect();
            for i in 0..COLS as usize {
                let want = if flush[i] != ' ' { 'T' } else { counts[i] };
                assert_eq!(got[i], want, "CPU{cpu} column {i} at zoom {zoom}");
                t_cells += usize::from(want == 'T');
            }
        }
    }
    assert!(t_cells > 0, "some cell shows a shootdown");
}

#[test]
fn gang_strip_covers_the_longest_fragmented_episodes() {
    let truth = truth("sim/bare-metal-s1.truth.json");
    let mut app = fixture_app("sim/bare-metal-s1.data");
    keys(&mut app, "pu");
    for g in truth["gangs"].as_array().unwrap() {
        let ep = &g["longest_episode"];
        let (start, dur) = (ep[0].as_u64().unwrap(), ep[1].as_u64().unwrap());
        assert!(dur > 0);
        // the episode across the middle half of the lanes
        app.view
            .show(start.saturating_sub(dur / 2), start + dur + dur / 2);
        let s = screen(&mut app, W, 14);
        let strips: Vec<Vec<char>> = (0..2)
            .map(|c| strip(&s, c, " gng").chars().collect())
            .collect();
        for i in 0..COLS {
            let (a, b) = app.view.col_range(i, COLS);
            let any = strips.iter().any(|st| st[i as usize] != ' ');
            if a >= start && b <= start + dur {
                // fragmented: some member runs all along (not all of them)
                assert!(any, "column {i} inside episode {start}+{dur}");
            } else if b <= start || a >= start + dur {
                // only this gang's and the other gang's kept episodes
                // are drawn: outside, a non-blank cell is another episode
                if any {
                    let other = truth["gangs"].as_array().unwrap().iter().any(|o| {
                        let e = &o["longest_episode"];
                        let (s0, d0) = (e[0].as_u64().unwrap(), e[1].as_u64().unwrap());
                        a < s0 + d0 && b > s0
                    }) || app.data().is_some_and(|d| {
                        d.report
                            .gang
                            .as_ref()
                            .unwrap()
                            .0
                            .as_ref()
                            .unwrap()
                            .gangs
                            .iter()
                            .any(|gg| {
                                gg.episodes
                                    .iter()
                                    .any(|e| a < e.start_ns + e.duration_ns && b > e.start_ns)
                            })
                    });
                    assert!(other, "column {i} outside every episode is blank");
                }
            }
        }
    }
}

/// The timestamp (ns) of an ftrace text line.
fn line_ns(l: &str) -> u64 {
    let ts = l
        .split(']')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap();
    let (s, us) = ts.trim_end_matches(':').split_once('.').unwrap();
    s.parse::<u64>().unwrap() * 1_000_000_000 + us.parse::<u64>().unwrap() * 1000
}

/// The densest 1 ms window of `times` (sorted), by brute force:
/// `(first, last)` of the earliest window with the most events.
fn densest(times: &[u64]) -> (u64, u64) {
    let mut best = (0, 0, 0);
    for (i, &t) in times.iter().enumerate() {
        let inside: Vec<u64> = times[i..]
            .iter()
            .copied()
            .filter(|&u| u < t + 1_000_000)
            .collect();
        if inside.len() > best.2 {
            best = (t, *inside.last().unwrap(), inside.len());
        }
    }
    (best.0, best.1)
}

#[test]
fn lhp_and_tlb_rows_jump_to_their_densest_burst() {
    // LHP: the first PLE row is the first VM of the report
    let mut app = fixture_app("sim/mixed-s1.data");
    let vm = {
        let l = app
            .data()
            .unwrap()
            .report
            .lhp
            .as_ref()
            .unwrap()
            .0
            .as_ref()
            .unwrap();
        l.ple.0.as_ref().unwrap().per_vm[0].tgid.unwrap().0
    };
    let text = std::fs::read_to_string(path("sim/mixed-s1.txt")).unwrap();
    let tag = format!("({vm:>7})");
    let mut times: Vec<u64> = text_events("sim/mixed-s1.txt", |e| {
        e.starts_with("kvm_exit:")
            && (e.contains(" reason PAUSE_INSTRUCTION ") || e.contains(" reason pause "))
    })
    .into_iter()
    .map(|(_, t)| t)
    .collect();
    // keep the VM's own exits: same lines, filtered by the TGID column
    let vm_lines: Vec<u64> = text
        .lines()
        .filter(|l| l.contains(&tag) && l.contains("kvm_exit:"))
        .filter(|l| l.contains(" reason PAUSE_INSTRUCTION ") || l.contains(" reason pause "))
        .map(line_ns)
        .collect();
    times.retain(|t| vm_lines.contains(t));
    assert!(times.len() > 50, "{} exits of VM {vm}", times.len());
    let (first, last) = densest(&times);
    keys(&mut app, "4");
    key(&mut app, ratatui::crossterm::event::KeyCode::Enter);
    assert_eq!(app.tab, 0, "Enter on the PLE row jumps");
    assert_eq!(app.view.cursor, first);
    assert!(app.view.start <= first && last < app.view.end());
    let s = screen(&mut app, W, 20);
    assert!(
        s.iter()
            .any(|l| l.starts_with("jumped to the densest 1 ms of PLE exits of")),
        "{}",
        s.join("\n")
    );

    // TLB: the first sender row jumps to its densest shootdown burst
    let rel = "tlb/tracefs-tlb.txt";
    let mut app = fixture_app(rel);
    let (pid, row) = {
        let d = app.data().unwrap();
        let t = d.report.tlb.as_ref().unwrap().0.as_ref().unwrap();
        let pid = t.senders[0].pid;
        let tab = &d.tables.tabs[4];
        let row = tab
            .rows
            .iter()
            .position(|r| r.cells[0] == "sender")
            .expect("a sender row");
        (pid, row)
    };
    let text = std::fs::read_to_string(path(rel)).unwrap();
    let tag = format!("({pid:>7})");
    let times: Vec<u64> = text
        .lines()
        .filter(|l| l.contains(&tag))
        .filter(|l| {
            (l.contains("csd_queue_cpu:") || l.contains("ipi_send_cpu"))
                && (l.contains("func=flush_tlb_func") || l.contains("callback=flush_tlb_func"))
        })
        .map(line_ns)
        .collect();
    assert!(times.len() > 5, "{} shootdowns sent by {pid}", times.len());
    let (first, last) = densest(&times);
    keys(&mut app, "6");
    for _ in 0..row {
        keys(&mut app, "j");
    }
    key(&mut app, ratatui::crossterm::event::KeyCode::Enter);
    assert_eq!(app.tab, 0, "Enter on the sender row jumps");
    assert_eq!(app.view.cursor, first);
    assert!(app.view.start <= first && last < app.view.end());
}

#[test]
fn every_overlay_on_at_tiny_sizes_never_panics() {
    let mut app = fixture_app("sim/mixed-s1.data");
    keys(&mut app, "weivou");
    assert_eq!(app.overlays.len(), 6);
    for (w, h) in [(1, 1), (2, 2), (20, 5), (9, 3), (80, 24), (1, 30), (200, 1)] {
        let s = screen(&mut app, w, h);
        assert_eq!(s.len(), usize::from(h));
    }
    // at 80x24 the first CPU's strips are labelled in strip order
    let s = screen(&mut app, 80, 24);
    let labels: Vec<&str> = s[3..10].iter().map(|l| &l[..4]).collect();
    assert_eq!(
        labels,
        [" wai", " lat", " pre", " wst", " ple", " ipi", " gng"]
    );
}

/// The tiny timeline with cgroup `/g/a` (alpha, tid 100, is its member by
/// recorded membership) sampled every 200 ns: `nr_throttled` grows in
/// [200, 400) (2 throttles, 150 ns) and [600, 800) (1, 40 ns). Alpha runs
/// on CPU0 during the first and waits there during the second; no member
/// is ever on CPU1.
fn throttled_app() -> App {
    use schedscope_analysis::throttle::Throttling;
    use schedscope_trace::{CgroupSample, Tid, Trace, TraceFormat, Ts};
    let mut trace = Trace::new("thr", TraceFormat::PerfData);
    for (ts, n, ns) in [
        (0, 0, 0),
        (200, 0, 0),
        (400, 2, 150),
        (600, 2, 150),
        (800, 3, 190),
        (1000, 3, 190),
    ] {
        trace.cgroup_samples.push(CgroupSample {
            ts: Ts(ts),
            path: "/g/a".into(),
            quota_us: 50_000,
            period_us: 100_000,
            nr_periods: ts / 100,
            nr_throttled: n,
            throttled_ns: ns,
            usage_ns: None,
        });
    }
    trace.tasks.get_or_insert(Tid(100)).cgroup = Some("/g/a".into());
    let mut data = schedscope_tui::Data::new(tiny_timeline(), empty_report());
    data.marks.throttled =
        schedscope_tui::overlay::Throttled::new(Throttling::compute(&trace), &data.timeline);
    App::with_data("thr.data", data, false)
}

#[test]
fn throttled_periods_band_the_cpus_their_members_used() {
    // 100 lane columns over 1000 ns: column i is [10 i, 10 i + 10)
    const W: u16 = 108;
    let mut app = throttled_app();
    keys(&mut app, "r");
    assert_eq!(
        app.message,
        "throttled periods: 2 in 1 of 1 sampled cgroups"
    );
    let s = screen(&mut app, W, 20);
    let cpu0 = strip(&s, 0, " thr");
    // 150 ns throttled over [200, 400): 0.75 per ns, 6/8 of a block;
    // 40 ns over [600, 800): 0.2, rounded up to 2/8
    let want: String = (0..100)
        .map(|i| match i {
            20..40 => '▆',
            60..80 => '▂',
            _ => ' ',
        })
        .collect();
    assert_eq!(cpu0, want, "CPU0 thr strip:\n{}", s.join("\n"));
    assert_eq!(
        strip(&s, 1, " thr").trim(),
        "",
        "no member on CPU1:\n{}",
        s.join("\n")
    );

    // the detail line on the strip, cursor inside the first period
    let row = app
        .lane_rows()
        .iter()
        .position(|r| *r == schedscope_tui::app::LaneRow::Overlay(0, Overlay::Throttled))
        .expect("thr row of CPU0");
    app.lane = row;
    app.view.cursor = 300;
    let s = screen(&mut app, 200, 20);
    let detail = &s[18];
    assert!(
        detail.contains("CPU0 @")
            && detail.contains("/g/a throttled 2x for 150 ns, members alpha[100]; samples ")
            && detail.contains(", quota 50.000 ms/100.000 ms"),
        "detail: {detail}"
    );
    app.view.cursor = 500;
    let s = screen(&mut app, W, 20);
    assert!(
        s[18].contains("no throttled period here (2 in the trace)"),
        "{}",
        s[18]
    );

    // alpha's task lane is underlined inside its cgroup's periods
    app.selected = vec![100];
    keys(&mut app, "t");
    let buf = buffer(&mut app, W, 20);
    let y = (0..20u16)
        .find(|&y| {
            (0..8)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .starts_with("alpha")
        })
        .expect("alpha's task lane");
    for (col, under) in [(25u16, true), (50, false), (65, true), (90, false)] {
        let m = buf[(8 + col, y)].modifier;
        assert_eq!(
            m.contains(ratatui::style::Modifier::UNDERLINED),
            under,
            "column {col}"
        );
    }

    // toggled off again: no strip
    keys(&mut app, "r");
    let s = screen(&mut app, W, 20);
    assert!(!s.iter().any(|l| l.starts_with(" thr")), "{}", s.join("\n"));
}

#[test]
fn throttled_overlay_says_when_the_trace_has_no_cgroup_samples() {
    let mut app = tiny_app(false);
    keys(&mut app, "r");
    assert!(
        app.message == "throttled: no cgroup samples in this trace",
        "{}",
        app.message
    );
    let s = screen(&mut app, 108, 20);
    assert_eq!(strip(&s, 0, " thr").trim(), "");
    // the help lists the key
    keys(&mut app, "?");
    let s = screen(&mut app, 80, 24);
    assert!(
        s.iter()
            .any(|l| l.contains("w / e / i / r") && l.contains("throttled")),
        "{}",
        s.join("\n")
    );
}
