//! The text views read only the reports: computed from fixtures (the
//! trace dropped before rendering) or built by hand, they print the
//! headline first, `--top` rows, the member comms and the host the report
//! carries.

use schedscope_analysis::latency::{LatencyReport, TaskLatency, WaitStart, WaitStarts};
use schedscope_analysis::report::TraceSummary;
use schedscope_analysis::{Options, Report, Sections};
use schedscope_render::{RenderText, TextOptions};
use std::path::PathBuf;

/// A report of a fixture; the trace is dropped before rendering.
fn report(fixture: &str, sections: Sections) -> Report {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(fixture);
    let trace = schedscope_parser::load(&p).expect("fixture loads");
    Report::compute(&trace, sections, &Options::default())
}

fn text(r: &impl RenderText, top: usize) -> String {
    let mut out = Vec::new();
    r.render_text(&TextOptions { top }, &mut out)
        .expect("write to a Vec");
    String::from_utf8(out).expect("utf8")
}

fn task(tid: i32, comm: &str, runtime_ns: u64, max_ns: u64, at_ns: u64) -> TaskLatency {
    TaskLatency {
        tid,
        tgid: Some(tid),
        comm: comm.into(),
        switches: 2,
        runtime_ns,
        wakeups: 1,
        delay_max_ns: max_ns,
        delay_avg_ns: max_ns / 2,
        delay_max_at_ns: at_ns,
        delay_max_start_ns: at_ns - max_ns,
        delay_max_start: Some(WaitStart::Wakeup),
        delay_total_ns: max_ns,
        preemptions: 0,
        preempt_delay_max_ns: 0,
        preempt_delay_total_ns: 0,
        ..TaskLatency::default()
    }
}

#[test]
fn latency_has_headline_table_top_rows_and_totals() {
    let r = LatencyReport {
        tasks: vec![
            task(5, "worker", 150, 2_000_000, 2_000_300),
            task(6, "other", 50, 1_000, 3_000_000),
        ],
        total_switches: 4,
        total_runtime_ns: 200,
        total_wakeups: 2,
        context_switch_bugs: 0,
        wakeup_event: "sched:sched_wakeup".into(),
        waits_by_start: WaitStarts {
            wakeup: 4,
            ..WaitStarts::default()
        },
        ..LatencyReport::default()
    };
    let s = text(&r, 1);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0],
        "Scheduling latency: max delay 2.000 ms (worker:5 at 0.002000 s, waiting since its sched:sched_wakeup); 2 tasks, 4 switches, 2 wakeups"
    );
    assert!(
        lines[1].contains("Runtime ms") && lines[1].contains("Max delay ms"),
        "{s}"
    );
    assert!(lines[3].starts_with("  worker:5 "), "{s}");
    assert!(!s.contains("other:6"), "--top 1 shows one row: {s}");
    assert!(s.contains("TOTAL (2 tasks)"), "{s}");
    assert!(s.contains("(1 more tasks not shown"), "{s}");
    assert!(text(&r, 0).contains("  other:6 "), "--top 0 shows all");
}

#[test]
fn the_summary_line_names_the_host_the_report_carries() {
    let mut r = report("sim/bare-metal-s1.data", Sections::default());
    assert_eq!(r.trace.host.as_deref(), Some("schedscope-sim"));
    let first = |r: &Report| text(r, 20).lines().next().unwrap_or("").to_string();
    assert!(
        first(&r).contains("bare-metal-s1.data: perf.data recorded on schedscope-sim, "),
        "{}",
        first(&r)
    );
    r.trace.host = Some("elsewhere".into());
    assert!(first(&r).contains(": perf.data recorded on elsewhere, "));
    r.trace.host = None;
    assert!(first(&r).contains("bare-metal-s1.data: perf.data, "));
}

#[test]
fn gang_members_show_their_comms_from_the_report() {
    let r = report("sim/mixed-s1.data", Sections::all());
    let gangs = r
        .gang
        .as_ref()
        .expect("gang asked")
        .0
        .as_ref()
        .expect("gangs");
    let vm = gangs
        .gangs
        .iter()
        .find(|g| g.name.starts_with("VM 1000"))
        .expect("VM 1000");
    assert_eq!(vm.member_comms.len(), vm.members.len());
    assert_eq!(vm.member_comms[0], "CPU 0/KVM");
    let s = text(&r, 20);
    assert!(s.contains("  1001 (vcpu 0)  CPU 0/KVM "), "{s}");
    for title in [
        "== Scheduling latency ==",
        "== Gang co-run ==",
        "== Lock-holder preemption ==",
        "== Idle under bandwidth control ==",
        "== TLB shootdowns and IPIs ==",
    ] {
        assert!(s.contains(title), "{title} missing");
    }
}

#[test]
fn top_limits_the_tlb_callsite_table() {
    let r = report(
        "tlb/tracefs-tlb.txt",
        Sections {
            tlb: true,
            ..Sections::default()
        },
    );
    let tlb = r.tlb.as_ref().expect("tlb asked").0.as_ref().expect("tlb");
    assert!(tlb.top_callsites.len() > 3);
    let s = text(tlb, 3);
    assert!(s.starts_with("TLB shootdowns: "), "{s}");
    let callsites = s.split("Top callsites").nth(1).expect("callsites");
    let rows = callsites
        .lines()
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .count();
    assert_eq!(rows, 3, "{s}");
}

#[test]
fn a_failed_section_prints_why_under_its_title() {
    let r = report(
        "sim/bare-metal-s1.data",
        Sections {
            tlb: true,
            ..Sections::default()
        },
    );
    let s = text(&r, 20);
    let after = s
        .split("== TLB shootdowns and IPIs ==\n")
        .nth(1)
        .expect("tlb title");
    assert!(after.starts_with("tlb: the trace has no"), "{after}");
}

#[test]
fn a_hand_made_summary_prints_as_given() {
    let r = Report {
        trace: TraceSummary {
            path: "x.data".into(),
            format: schedscope_trace::TraceFormat::PerfData,
            events: 10,
            lost: 5,
            lost_by_cpu: Vec::new(),
            cpus: 2,
            start_ns: 0,
            end_ns: 1_500_000_000,
            events_by_name: Default::default(),
            warnings: Vec::new(),
            host: None,
            cpu_unknown: false,
        },
        latency: None,
        gang: None,
        lhp: None,
        idle: None,
        tlb: None,
        profile: None,
    };
    assert_eq!(
        text(&r, 20),
        "x.data: perf.data, 10 events over 1.500 s on 2 CPUs, 5 lost (33.3%)\n"
    );
    // perf script text without a CPU column: the CPU is unknown, not "1 CPUs".
    let mut r = r;
    r.trace.lost = 0;
    r.trace.cpus = 1;
    r.trace.cpu_unknown = true;
    assert_eq!(
        text(&r, 20),
        "x.data: perf.data, 10 events over 1.500 s on unknown CPUs (the text has no CPU column)\n"
    );
    r.trace.cpu_unknown = false;
    assert!(text(&r, 20).contains(" on 1 CPU\n"));
}

/// Process 100 on 2 CPUs: its main thread (100) runs 1.0 .. 1.1, wakes
/// workers 101 and 102 and sleeps; 101 runs on CPU 0 from 1.1 and 102 on
/// CPU 1 from 1.1 + `late` s (Runnable until then), both until 2.1, when
/// 101 wakes the main thread, which runs 2.1 .. 2.2 on CPU 0.
fn sleeping_main(late: &str) -> String {
    format!(
        "\
# tracer: nop
#           TASK-PID       TGID    CPU#  |||||  TIMESTAMP  FUNCTION
          <idle>-0       (-------) [000] d..2.   1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=main next_pid=100 next_prio=120
            main-100     (    100) [000] d..2.   1.100000: sched_wakeup: comm=w1 pid=101 prio=120 target_cpu=000
            main-100     (    100) [000] d..2.   1.100000: sched_wakeup: comm=w2 pid=102 prio=120 target_cpu=001
            main-100     (    100) [000] d..2.   1.100000: sched_switch: prev_comm=main prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=w1 next_pid=101 next_prio=120
          <idle>-0       (-------) [001] d..2.   {late}: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=w2 next_pid=102 next_prio=120
              w1-101     (    100) [000] d..2.   2.100000: sched_wakeup: comm=main pid=100 prio=120 target_cpu=000
              w1-101     (    100) [000] d..2.   2.100000: sched_switch: prev_comm=w1 prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=main next_pid=100 next_prio=120
              w2-102     (    100) [001] d..2.   2.100000: sched_switch: prev_comm=w2 prev_pid=102 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
            main-100     (    100) [000] d..2.   2.200000: sched_switch: prev_comm=main prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
"
    )
}

#[test]
fn gang_verdict_leads_with_demand_co_run_when_the_main_thread_sleeps() {
    // (when 102 starts, demand co-run, co-ran, fragmented, demand ns):
    // two or more want a CPU 1.1 .. 2.1 (1 s); all three never run together.
    for (late, demand, frag, demand_ns) in [
        // both workers run the whole second: every member that wants a CPU has one
        ("1.100000", "100%", "0%", 1_000_000_000),
        // 102 waits 0.1 s of it while 101 runs: met 0.9 of 1 s; fragmented
        // 0.1 s of the 1.2 s any member ran
        ("1.200000", "90%", "8%", 1_000_000_000),
    ] {
        let trace = schedscope_parser::load_bytes("gen.txt", sleeping_main(late).as_bytes())
            .expect("generated trace loads");
        let r = Report::compute(
            &trace,
            Sections {
                gang: true,
                ..Sections::default()
            },
            &Options::default(),
        );
        let gangs = r
            .gang
            .as_ref()
            .expect("gang asked")
            .0
            .as_ref()
            .expect("gangs");
        assert_eq!(gangs.gangs.len(), 1, "{late}: {:?}", gangs.gangs);
        let g = &gangs.gangs[0];
        assert_eq!(g.demand_ns, demand_ns, "{late}");
        assert_eq!(g.corun_ratio, 0.0, "{late}");
        let s = text(gangs, 10);
        assert_eq!(
            s.lines().next().unwrap_or(""),
            format!(
                "  process 100 (main): the threads that wanted a CPU ran together {demand} of the time two or more wanted one (demand co-run); all 3 threads co-ran 0% of the time it ran; {frag} fragmented"
            ),
            "{late}:\n{s}"
        );
    }
}

#[test]
fn latency_says_how_far_loss_can_move_the_largest_wait() {
    let mut r = LatencyReport {
        tasks: vec![task(5, "worker", 150, 2_000_000, 2_000_300)],
        total_switches: 1,
        ..LatencyReport::default()
    };
    assert!(!text(&r, 1).contains("given the events lost"));
    r.max_delay_ns_min = Some(1_500_000);
    r.max_delay_ns_max = Some(4_250_000);
    let s = text(&r, 1);
    assert!(
        s.contains("Largest wait: 2.000 ms, 1.500-4.250 ms given the events lost"),
        "{s}"
    );
    r.max_delay_ns_min = Some(2_000_000);
    r.max_delay_ns_max = Some(2_000_000);
    let s = text(&r, 1);
    assert!(
        s.contains("Largest wait: 2.000 ms; the events lost cannot change it"),
        "{s}"
    );
}
