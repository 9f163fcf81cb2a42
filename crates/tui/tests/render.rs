//! What the TUI draws, read back from ratatui's TestBackend: lanes of a
//! hand-made trace with known content, the region pane, the analysis tabs
//! on a simulator fixture against its truth file, jumps, help, loading,
//! and tiny terminal sizes.

mod common;

use common::*;
use ratatui::crossterm::event::KeyCode;
use ratatui::style::Color;
use schedscope_tui::draw::colour;
use schedscope_tui::keymap::BINDINGS;
use schedscope_tui::App;

/// At 108 columns the lanes have 100 cells of 10 ns over the 1000 ns trace.
const W: u16 = 108;

#[test]
fn cpu_lanes_show_who_ran_where_without_colour() {
    let mut app = tiny_app(true);
    let s = screen(&mut app, W, 12);
    assert!(s[0].starts_with(" 1:Timeline  2:Latency"), "{}", s[0]);
    // alpha (code A0) on CPU0 for [0, 500) = cells 0..50, then idle
    assert_eq!(
        s[2],
        format!("CPU0    {}{}", "A0".repeat(25), " ".repeat(50))
    );
    // alpha waits for CPU0 [500, 1000): one task = a 2/8 strip (log scale)
    assert_eq!(
        s[3],
        format!(" wait   {}{}", " ".repeat(50), "▂".repeat(50))
    );
    // beta (A1) on CPU1 from 250 ns = cell 25
    assert_eq!(
        s[4],
        format!("CPU1    {}{}A", " ".repeat(25), "A1".repeat(37))
    );
    assert_eq!(
        s[5],
        format!(
            " wait   {}{}{}",
            " ".repeat(10),
            "▂".repeat(15),
            " ".repeat(75)
        )
    );
}

#[test]
fn time_axis_has_units_and_ticks_at_round_times() {
    let mut app = tiny_app(true);
    let s = screen(&mut app, W, 12);
    // 200 ns ticks every 20 cells, labelled in seconds
    assert!(s[1].starts_with("time    |0.0000000s"), "{}", s[1]);
    assert_eq!(&s[1][8 + 20..8 + 31], "|0.0000002s");
    assert!(s[11].contains("window 1.0 us"), "{}", s[11]);
}

#[test]
fn colour_lanes_use_the_process_colour_and_eighth_blocks() {
    let mut app = tiny_app(false);
    let buf = buffer(&mut app, W, 12);
    let alpha = colour(100);
    let beta = colour(200);
    assert_ne!(alpha, beta);
    for x in 8..58 {
        assert_eq!(buf[(x, 2)].symbol(), "█");
        assert_eq!(buf[(x, 2)].fg, alpha);
    }
    assert_eq!(buf[(58, 2)].symbol(), " ");
    assert_eq!(buf[(8 + 30, 4)].fg, beta);
    assert_eq!(buf[(8 + 60, 3)].fg, Color::Yellow);
    // 6 cells of ~167 ns: beta starts at 250, inside cell 1 = [166, 333),
    // busy 83/167 of it: a half block
    let mut app = tiny_app(false);
    let s = screen(&mut app, 8 + 6, 12);
    assert_eq!(s[2], "CPU0    ███   ");
    assert_eq!(s[4], "CPU1     ▄████");
}

#[test]
fn several_tasks_in_a_cell_show_the_busy_height_in_the_main_process_colour() {
    let mut app = tiny_app(true);
    // one cell for the whole trace: CPU0 has only alpha, so its code
    let s = screen(&mut app, 9, 12);
    assert_eq!(s[2], "CPU0    A");
    // per 1000 ns: alpha [0, 300), beta [300, 700), idle [700, 1000),
    // 160 times (one period per column at 168 columns): every cell is 70%
    // busy (ceil(5.6) = 6 eighths) with beta the main process (400 ns)
    let shared = || {
        let mut tl = tiny_timeline();
        tl.end = schedscope_trace::Ts(160_000);
        let run = |s: u64, e: u64, tid: i32| schedscope_analysis::CpuRun {
            ts: schedscope_trace::Ts(s),
            end: Some(schedscope_trace::Ts(e)),
            tid: schedscope_trace::Tid(tid),
        };
        tl.cpus[0] = (0..160u64)
            .flat_map(|i| {
                let t = i * 1000;
                [
                    run(t, t + 300, 100),
                    run(t + 300, t + 700, 200),
                    run(t + 700, t + 1000, 0),
                ]
            })
            .collect();
        schedscope_tui::Data::new(tl, empty_report())
    };
    // without colour: the height block (no code: several tasks)
    let mut app = App::with_data("two", shared(), true);
    let s = screen(&mut app, 9, 12);
    assert_eq!(s[2], "CPU0    ▆");
    // and the legend names only tasks whose code is drawn: beta alone on
    // CPU1 [250, 1000), not alpha (only ever in shared cells)
    let s = screen(&mut app, 168, 12);
    assert_eq!(s[4].trim_end(), "CPU1    A");
    assert_eq!(s[9].trim_end(), "tasks   A1=beta[200]");
    // with colour: the same block in beta's colour
    let mut app = App::with_data("two", shared(), false);
    let buf = buffer(&mut app, 9, 12);
    assert_eq!(buf[(8, 2)].symbol(), "▆");
    assert_eq!(buf[(8, 2)].fg, colour(200));
    // at 168 columns, one period per cell: the same in every cell, and
    // the detail line counts the cursor cell's tasks and names its main
    // process
    let buf = buffer(&mut app, 168, 12);
    for x in 8..168 {
        assert_eq!(buf[(x, 2)].symbol(), "▆", "column {x}");
        assert_eq!(buf[(x, 2)].fg, colour(200), "column {x}");
    }
    let s = screen(&mut app, 168, 12);
    assert_eq!(
        s[10].trim_end(),
        "CPU0 @0.0000000s: 2 tasks in 1.0 us (70% busy), most pid 200 beta 40%; 0 waiting; \
         at the cursor alpha[100] ran 0.000000000s..0.000000300s (300 ns)"
    );
}

#[test]
fn detail_line_names_the_run_under_the_cursor() {
    let mut app = tiny_app(true);
    let s = screen(&mut app, W, 12);
    assert_eq!(
        s[10].trim_end(),
        "CPU0 @0.000000000s: alpha[100] pid 100 ran 0.000000000s..0.000000500s (500 ns); 0 waiting"
    );
    key(&mut app, KeyCode::Char('j'));
    key(&mut app, KeyCode::Char('j'));
    key(&mut app, KeyCode::Char('G'));
    let s = screen(&mut app, W, 12);
    assert!(
        s[10].starts_with("CPU1 @0.000000999s: beta[200] pid 200 ran 0.000000250s..0.000001000s (750 ns); 0 waiting"),
        "{}",
        s[10]
    );
}

#[test]
fn region_pane_shows_the_statistics_between_the_markers() {
    let mut app = tiny_app(true);
    keys(&mut app, "a");
    key(&mut app, KeyCode::End);
    keys(&mut app, "b");
    // [0, 999): computed by hand from the tiny trace
    let r = app.region.clone().expect("region");
    assert_eq!((r.a, r.b), (0, 999));
    assert_eq!(r.busy_ns, 500 + 749);
    assert_eq!(r.idle_ns, 499 + 250);
    // CPU0 idles [500, 999) while alpha waits; CPU1 idles [100, 250) while beta waits
    assert_eq!(r.wasted_idle_ns, 499 + 150);
    assert_eq!(r.latencies, vec![150]);
    assert_eq!(r.preemptions, 1);
    let tasks: Vec<_> = r
        .tasks
        .iter()
        .map(|t| (t.tid, t.cpu_ns, t.wait_ns, t.preemptions))
        .collect();
    assert_eq!(tasks, vec![(200, 749, 150, 0), (100, 500, 499, 1)]);
    let s = screen(&mut app, W, 16);
    let pane: Vec<String> = s
        .iter()
        .map(|l| l.chars().skip(usize::from(W) - 34).collect())
        .collect();
    assert_eq!(pane[1].trim_end(), "│Region A-B 999 ns");
    assert_eq!(pane[4].trim_end(), "│wasted idle 649 ns");
    assert_eq!(pane[5].trim_end(), "│preemptions 1");
    assert_eq!(pane[6].trim_end(), "│latency n=1");
    assert_eq!(pane[7].trim_end(), "│ p50 150 ns p90 150 ns");
    assert_eq!(pane[10].trim_end(), "│200 beta     0.001  0.000   0");
    assert!(s[15].contains("A-B 999 ns"), "{}", s[15]);
    // the axis marks B (A is under the tab label column at the far left)
    assert!(s[1].contains('A'), "{}", s[1]);
}

#[test]
fn gang_tab_lists_the_gangs_of_the_truth_file() {
    let mut app = fixture_app("sim/bare-metal-s1.data");
    let truth = truth("sim/bare-metal-s1.truth.json");
    keys(&mut app, "3");
    let s = screen(&mut app, 140, 24);
    assert!(s[1].starts_with("2 gangs"), "{}", s[1]);
    for g in truth["gangs"].as_array().unwrap() {
        let tgid = g["tgid"].as_i64().unwrap();
        let line = s
            .iter()
            .find(|l| l.starts_with(&format!("process {tgid} ")))
            .unwrap_or_else(|| panic!("gang {tgid} listed:\n{}", s.join("\n")));
        // co-ran as the text report's verdict prints it (whole percent)
        let ratio = format!("{:.0}%", g["corun_ratio"].as_f64().unwrap() * 100.0);
        let frag = format!("{:.3}", g["fragmented_ns"].as_u64().unwrap() as f64 / 1e6);
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert!(cells.contains(&ratio.as_str()), "{line} has ratio {ratio}");
        assert!(
            cells.contains(&frag.as_str()),
            "{line} has fragmented {frag}"
        );
        assert_eq!(cells[3], g["members"].as_array().unwrap().len().to_string());
    }
}

#[test]
fn gang_tab_shows_the_demand_co_run_of_the_simulators_truth() {
    // the fixture's scenario, simulated again for the truth's demand
    // co-run (the stored truth files predate it)
    let mut cfg = schedscope_sim::Config::scenario("bare-metal", 1).expect("scenario");
    cfg.ticks = 5000;
    let sim = schedscope_sim::simulate(&cfg);
    let bytes = schedscope_sim::perf::to_perf_data(&sim).expect("perf.data");
    let trace = schedscope_parser::load_bytes("sim.data", &bytes).expect("decode");
    let mut app = App::with_data(
        "sim.data",
        schedscope_tui::Data::from_trace(trace, &|_| {}),
        false,
    );
    keys(&mut app, "3");
    let s = screen(&mut app, 160, 24);
    assert!(s[2].contains("demand co-ran"), "{}", s[2]);
    let mut shown = 0;
    for g in &sim.truth.gangs {
        let line = s
            .iter()
            .find(|l| l.starts_with(&format!("process {} ", g.tgid)))
            .unwrap_or_else(|| panic!("gang {} listed:\n{}", g.tgid, s.join("\n")));
        let cells: Vec<&str> = line.split_whitespace().collect();
        // process TGID (comm) members demand co-ran ...
        let want = if g.demand_ns == 0 {
            "-".to_string()
        } else {
            format!("{:.0}%", g.demand_corun_ratio * 100.0)
        };
        assert_eq!(cells[4], want, "{line}");
        assert_eq!(cells[5], format!("{:.0}%", g.corun_ratio * 100.0), "{line}");
        shown += (g.demand_ns > 0) as usize;
    }
    assert!(shown > 0, "some gang had demand");
}

#[test]
fn enter_on_a_gang_row_jumps_to_its_longest_episode() {
    let mut app = fixture_app("sim/bare-metal-s1.data");
    let truth = truth("sim/bare-metal-s1.truth.json");
    let ep = &truth["gangs"][0]["longest_episode"];
    let (start, dur) = (ep[0].as_u64().unwrap(), ep[1].as_u64().unwrap());
    keys(&mut app, "3");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.tab, 0);
    assert_eq!(app.view.cursor, start);
    assert!(app.view.start <= start && start + dur <= app.view.end());
    let s = screen(&mut app, 120, 24);
    assert!(s[0].starts_with(" 1:Timeline"));
    // the cursor column is where the episode starts
    let cols = 120 - 8;
    let c = app.view.col_of(start, cols).unwrap();
    let buf = buffer(&mut app, 120, 24);
    assert!(buf[(8 + c, 2)]
        .modifier
        .contains(ratatui::style::Modifier::REVERSED));
    assert!(
        s[23].starts_with("jumped to the longest fragmented episode of process 5000 (worker-p0)"),
        "{}",
        s[23]
    );
}

#[test]
fn latency_tab_jumps_to_the_worst_delay() {
    let mut app = fixture_app("sim/mixed-s1.data");
    keys(&mut app, "2");
    let s = screen(&mut app, 140, 24);
    assert!(s[2].starts_with("Task"), "{}", s[2]);
    let (worst, at_start, tid) = {
        let d = app.data().unwrap();
        let l = d.report.latency.as_ref().unwrap().0.as_ref().unwrap();
        let t = l
            .tasks
            .iter()
            .max_by_key(|t| (t.delay_max_ns, -t.tid))
            .unwrap();
        (t.delay_max_ns, t.delay_max_start_ns, t.tid)
    };
    assert!(worst > 0);
    let comm = app.data().unwrap().tasks[&tid].comm.clone();
    assert!(s[3].starts_with(&format!("{comm}:{tid}")), "{}", s[3]);
    assert!(s[3].contains(&format!("{:.3}", worst as f64 / 1e6)));
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view.cursor, at_start);
    assert_eq!(app.selected, vec![tid]);
}

/// The row of `text` (a text report table) whose first cell is `first`,
/// split into cells on runs of 2+ spaces.
fn text_row(text: &str, first: &str) -> Vec<String> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(first))
        .unwrap_or_else(|| panic!("row {first} in:\n{text}"));
    line.trim()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn tabs_show_the_figures_of_the_text_report() {
    use schedscope_render::{RenderText, TextOptions};
    let mut app = fixture_app("sim/mixed-s1.data");
    let (latency_text, gang_text, worst, names, demand) = {
        let d = app.data().unwrap();
        let mut lt = Vec::new();
        let l = d.report.latency.as_ref().unwrap().0.as_ref().unwrap();
        l.render_text(&TextOptions { top: 0 }, &mut lt).unwrap();
        let mut gt = Vec::new();
        let g = d.report.gang.as_ref().unwrap().0.as_ref().unwrap();
        g.render_text(&TextOptions::default(), &mut gt).unwrap();
        let w = l
            .tasks
            .iter()
            .max_by_key(|t| (t.delay_max_ns, -t.tid))
            .unwrap();
        (
            String::from_utf8(lt).unwrap(),
            String::from_utf8(gt).unwrap(),
            format!("{}:{}", w.comm, w.tid),
            g.gangs.iter().map(|g| g.name.clone()).collect::<Vec<_>>(),
            g.gangs
                .iter()
                .map(|g| format!("{:.0}%", g.demand_corun_ratio * 100.0))
                .collect::<Vec<_>>(),
        )
    };
    assert!(names.len() >= 2, "{names:?}");
    // latency: the worst task's row, cell for cell, and the headline
    keys(&mut app, "2");
    let s = screen(&mut app, 220, 24);
    assert_eq!(
        s[1].trim_end(),
        format!("{} (Enter: show it)", latency_text.lines().next().unwrap())
    );
    let want = text_row(&latency_text, &worst);
    let got = text_row(&s.join("\n"), &worst);
    assert_eq!(got, want);
    assert_eq!(want.len(), 6, "{want:?}");
    // gang: the verdict leads with the demand co-run figure; it, its
    // co-ran and fragmented percentages, and the fragmented milliseconds
    // of the detail line, are the tab's
    keys(&mut app, "3");
    let s = screen(&mut app, 220, 24);
    for (name, demand) in names.iter().zip(&demand) {
        let Some(verdict) = gang_text
            .lines()
            .find(|l| l.trim().starts_with(&format!("{name}: ")))
        else {
            panic!("{name} in:\n{gang_text}");
        };
        let pcts: Vec<&str> = verdict
            .split_whitespace()
            .filter(|w| w.ends_with('%'))
            .collect();
        let detail = gang_text
            .lines()
            .find(|l| l.starts_with(&format!("{name}  (members")))
            .unwrap();
        let frag_ms = detail
            .split("fragmented ")
            .nth(1)
            .unwrap()
            .trim_end_matches(" ms)");
        let row = s
            .iter()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} row:\n{}", s.join("\n")));
        let cells: Vec<&str> = row[name.len()..].split_whitespace().collect();
        assert_eq!(pcts.len(), 3, "{verdict}");
        assert_eq!(pcts[0], demand, "demand co-run of {name}: {verdict}");
        assert!(
            verdict.contains(&format!(
                "ran together {demand} of the time two or more wanted one (demand co-run); all "
            )),
            "{verdict}"
        );
        assert_eq!(cells[1], pcts[0], "demand co-ran of {name}: {verdict}");
        assert_eq!(cells[2], pcts[1], "co-ran of {name}: {verdict}");
        assert_eq!(cells[3], frag_ms, "fragmented ms of {name}: {detail}");
        assert_eq!(cells[4], pcts[2], "fragmented share of {name}: {verdict}");
    }
}

#[test]
fn help_lists_every_binding_of_the_keymap() {
    let mut app = tiny_app(true);
    keys(&mut app, "?");
    let s = screen(&mut app, 100, 40).join("\n");
    for b in BINDINGS.iter().filter(|b| !b.keys.is_empty()) {
        assert!(
            s.contains(b.keys) && s.contains(b.help),
            "help shows {} {}",
            b.keys,
            b.help
        );
    }
    keys(&mut app, "x"); // any key closes
    assert!(!app.help);
}

#[test]
fn loading_screen_shows_progress_at_once() {
    let mut app = App::new("big.data", 179_600_000, true);
    app.on_load(schedscope_tui::data::LoadMsg::Phase("decoding"));
    let s = screen(&mut app, 80, 24);
    assert!(
        s.iter()
            .any(|l| l.starts_with("loading big.data (179.6 MB): decoding...")),
        "{}",
        s.join("\n")
    );
    app.on_load(schedscope_tui::data::LoadMsg::Failed(
        "big.data: bad magic".into(),
    ));
    let s = screen(&mut app, 80, 24);
    assert!(s[1].starts_with("error: big.data: bad magic"), "{}", s[1]);
}

#[test]
fn tiny_sizes_never_panic_and_80x24_shows_the_lanes() {
    for no_color in [false, true] {
        let mut app = tiny_app(no_color);
        keys(&mut app, "a");
        key(&mut app, KeyCode::End);
        keys(&mut app, "b");
        for tab in ["1", "2", "3", "4", "5", "6"] {
            keys(&mut app, tab);
            for (w, h) in [(1, 1), (2, 2), (20, 5), (9, 3), (80, 24), (1, 30), (200, 1)] {
                let s = screen(&mut app, w, h);
                assert_eq!(s.len(), usize::from(h));
                app.help = true;
                screen(&mut app, w, h);
                app.help = false;
            }
        }
        keys(&mut app, "1");
        let s = screen(&mut app, 80, 24);
        assert!(s[2].starts_with("CPU0"), "{}", s[2]);
        assert!(s[4].starts_with("CPU1"), "{}", s[4]);
    }
    let mut loading = App::new("x", 0, false);
    for (w, h) in [(1, 1), (20, 5), (80, 24)] {
        screen(&mut loading, w, h);
    }
}

#[test]
fn overlays_show_latency_preemptions_and_wasted_idle() {
    let mut app = tiny_app(true);
    keys(&mut app, "pwei");
    assert_eq!(app.overlays.len(), 3, "{:?}", app.lane_rows());
    let s = screen(&mut app, W, 14);
    let blank = |n: usize| " ".repeat(n);
    // CPU0: alpha preempted at 500 (cell 50); CPU0 idles [500, 1000) while alpha waits
    assert_eq!(s[3], format!(" lat    {}", blank(100)));
    assert_eq!(s[4], format!(" pre    {}1{}", blank(50), blank(49)));
    assert_eq!(s[5], format!(" wst    {}{}", blank(50), "█".repeat(50)));
    // CPU1: beta switched in at 250 (cell 25) after a 150 ns wait (under
    // 1 us: the lowest step); CPU1 idles [100, 250) while beta waits
    assert!(s[6].starts_with("CPU1"));
    assert_eq!(s[7], format!(" lat    {}▁{}", blank(25), blank(74)));
    assert_eq!(s[8], format!(" pre    {}", blank(100)));
    assert_eq!(
        s[9],
        format!(" wst    {}{}{}", blank(10), "█".repeat(15), blank(75))
    );
    keys(&mut app, "w");
    assert_eq!(app.lane_rows().len(), 6);
}

#[test]
fn wait_strip_is_a_log_scale() {
    use schedscope_tui::draw::pressure_glyph;
    let got: Vec<char> = [0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 500.0]
        .iter()
        .map(|&m| pressure_glyph(m))
        .collect();
    assert_eq!(got, vec![' ', '▂', '▃', '▄', '▆', '▇', '█', '█']);
}

#[test]
fn help_fits_80x24() {
    let mut app = tiny_app(false);
    keys(&mut app, "?");
    let s = screen(&mut app, 80, 24).join("\n");
    for b in BINDINGS.iter().filter(|b| !b.keys.is_empty()) {
        assert!(
            s.contains(&format!("{}  ", b.keys)) && s.contains(b.help),
            "80x24 help shows {}",
            b.keys
        );
    }
}

#[test]
fn every_action_has_a_key_in_the_help() {
    use ratatui::crossterm::event::{KeyEvent, KeyModifiers};
    use schedscope_tui::keymap::action_for;
    // each binding's first key maps back to its action (no key shadowed)
    for b in BINDINGS {
        let m = if b.ctrl {
            KeyModifiers::CONTROL
        } else {
            KeyModifiers::NONE
        };
        for &c in b.codes {
            assert_eq!(action_for(KeyEvent::new(c, m)), Some(b.action), "{c:?}");
        }
    }
}

#[test]
fn legend_names_the_tasks_in_the_lanes() {
    // beta fills 3/4 of CPU1's cells, alpha half of CPU0's: beta first
    let mut app = tiny_app(true);
    let s = screen(&mut app, W, 12);
    assert_eq!(s[9].trim_end(), "tasks   A1=beta[200] A0=alpha[100]");
    let mut app = tiny_app(false);
    let buf = buffer(&mut app, W, 12);
    let line: String = (0..W).map(|x| buf[(x, 9)].symbol().to_string()).collect();
    assert_eq!(line.trim_end(), "tasks   █beta[200] █alpha[100]");
    assert_eq!(buf[(8, 9)].fg, colour(200));
    assert_eq!(buf[(19, 9)].fg, colour(100));
    // the same number of cells: first appearance decides (alpha on CPU0)
    let mut tl = tiny_timeline();
    tl.cpus[1] = vec![
        schedscope_analysis::CpuRun {
            ts: schedscope_trace::Ts(0),
            end: Some(schedscope_trace::Ts(500)),
            tid: schedscope_trace::Tid(0),
        },
        schedscope_analysis::CpuRun {
            ts: schedscope_trace::Ts(500),
            end: Some(schedscope_trace::Ts(1000)),
            tid: schedscope_trace::Tid(200),
        },
    ]
    .into();
    let mut app = App::with_data("t", schedscope_tui::Data::new(tl, empty_report()), true);
    let s = screen(&mut app, W, 12);
    assert_eq!(s[9].trim_end(), "tasks   A0=alpha[100] A1=beta[200]");
}

#[test]
fn events_pane_lists_the_events_under_the_cursor_with_their_fields() {
    // fixtures/sim/bare-metal-s1.txt (the same events as ftrace text) starts:
    //   [000] 1000.000000: sched_wakeup_new: comm=worker-p0 pid=5000 prio=120 target_cpu=000
    //   [000] 1000.000000: sched_wakeup_new: comm=worker-p0 pid=5002 prio=120 target_cpu=000
    let mut app = fixture_app("sim/bare-metal-s1.data");
    keys(&mut app, "d");
    let s = screen(&mut app, 200, 30);
    let pane: Vec<&String> = s
        .iter()
        .skip_while(|l| !l.starts_with("events on CPU0"))
        .collect();
    assert!(!pane.is_empty(), "{}", s.join("\n"));
    // as perf script and the text trace print them
    assert_eq!(
        pane[1].trim_end(),
        "0.000000s swapper/0[0] sched:sched_wakeup_new: comm=worker-p0 pid=5000 prio=120 target_cpu=000"
    );
    assert_eq!(
        pane[2].trim_end(),
        "0.000000s swapper/0[0] sched:sched_wakeup_new: comm=worker-p0 pid=5002 prio=120 target_cpu=000"
    );
    // CPU1's lane: its own events (5001 and 5003 woke on CPU1)
    keys(&mut app, "jj");
    let s = screen(&mut app, 200, 30);
    let pane: Vec<&String> = s
        .iter()
        .skip_while(|l| !l.starts_with("events on CPU1"))
        .collect();
    assert!(
        pane[1].contains(": comm=worker-p0 pid=5001 prio=120 target_cpu=001"),
        "{}",
        pane[1]
    );
    keys(&mut app, "d");
    let s = screen(&mut app, 200, 30);
    assert!(!s.iter().any(|l| l.starts_with("events on")));
}
