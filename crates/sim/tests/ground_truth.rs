//! The gang and lhp analyses against the simulator's ground truth, through
//! both input formats (ftrace text and perf.data), plus `perf script` as the
//! oracle for the simulated perf.data.

use schedscope_analysis::gang::{GangKind, GangReport};
use schedscope_analysis::lhp::LhpReport;
use schedscope_analysis::{gang, lhp, AnalysisError, Context, Options, Timeline};
use schedscope_render::RenderText;
use schedscope_sim::{ftrace, perf, simulate, Config, Simulation, Truth};
use schedscope_trace::{Tid, Trace};
use std::collections::BTreeMap;

mod common;
use common::{load_perf, load_text};

/// Run `f` with the timeline of `trace` and `--gang-of` specs `specs`.
fn with_ctx<R>(trace: &Trace, specs: &[&str], f: impl FnOnce(&Context) -> R) -> R {
    let tl = Timeline::build(trace);
    let opts = Options {
        gang_specs: specs.iter().map(|s| s.to_string()).collect(),
        top: 10,
        ..Default::default()
    };
    f(&Context {
        trace,
        timeline: &tl,
        opts: &opts,
    })
}

fn run(
    trace: &Trace,
    specs: &[&str],
) -> (
    Result<GangReport, AnalysisError>,
    Result<LhpReport, AnalysisError>,
) {
    with_ctx(trace, specs, |ctx| (gang::analyze(ctx), lhp::analyze(ctx)))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn check_gangs(truth: &Truth, rep: &GangReport, what: &str) {
    assert_eq!(rep.gangs.len(), truth.gangs.len(), "{what}: gang count");
    for tg in &truth.gangs {
        let kind = if tg.kind == "vm" {
            GangKind::Vm
        } else {
            GangKind::Process
        };
        let g = rep
            .gangs
            .iter()
            .find(|g| g.tgid == Some(Tid(tg.tgid)) && g.kind == kind)
            .unwrap_or_else(|| panic!("{what}: no gang for tgid {}", tg.tgid));
        let members: Vec<i32> = g.members.iter().map(|t| t.0).collect();
        assert_eq!(members, tg.members, "{what}: members of {}", g.name);
        assert_eq!(
            g.running_hist_ns, tg.running_hist_ns,
            "{what}: hist of {}",
            g.name
        );
        assert_eq!(
            g.fragmented_ns, tg.fragmented_ns,
            "{what}: fragmented of {}",
            g.name
        );
        assert_eq!(
            g.any_running_ns, tg.any_running_ns,
            "{what}: any of {}",
            g.name
        );
        assert_eq!(
            g.all_running_ns, tg.all_running_ns,
            "{what}: all of {}",
            g.name
        );
        assert_eq!(
            g.member_running_ns, tg.member_running_ns,
            "{what}: member run of {}",
            g.name
        );
        assert!(
            close(g.corun_ratio, tg.corun_ratio),
            "{what}: corun of {}: {} vs {}",
            g.name,
            g.corun_ratio,
            tg.corun_ratio
        );
        assert_eq!(
            g.demand_ns, tg.demand_ns,
            "{what}: demand time of {}",
            g.name
        );
        assert!(
            close(g.demand_corun_ratio, tg.demand_corun_ratio),
            "{what}: demand corun of {}: {} vs {}",
            g.name,
            g.demand_corun_ratio,
            tg.demand_corun_ratio
        );
        for (a, row) in tg.pair_corun.iter().enumerate() {
            for (b, v) in row.iter().enumerate() {
                assert!(
                    close(g.pair_corun[a][b], *v),
                    "{what}: pair {a},{b} of {}",
                    g.name
                );
            }
        }
        let longest = g.episodes.first().map(|e| (e.start_ns, e.duration_ns));
        assert_eq!(
            longest, tg.longest_episode,
            "{what}: longest episode of {}",
            g.name
        );
        assert!(g
            .episodes
            .windows(2)
            .all(|w| w[0].duration_ns >= w[1].duration_ns));
    }
}

fn check_lhp(sim: &Simulation, rep: &LhpReport, what: &str) {
    let truth = &sim.truth;
    let secs = (truth.end_ns - truth.start_ns) as f64 / 1e9;
    if sim.config.vms.is_empty() {
        assert!(rep.ple.0.is_err(), "{what}: no VMs, yet PLE numbers");
    } else {
        let p = rep.ple.0.as_ref().expect("ple section");
        let c = truth.ple.counts;
        assert_eq!(
            [p.total, p.sibling_preempted, p.all_running, p.siblings_idle],
            c,
            "{what}: PLE totals"
        );
        assert!(c[0] > 0, "{what}: the scenario produced no PLE exits");
        assert!(close(p.per_second, c[0] as f64 / secs));
        assert_eq!(
            [
                p.directed_yield.to_sibling,
                p.directed_yield.to_other,
                p.directed_yield.no_switch
            ],
            [
                truth.ple.to_sibling,
                truth.ple.to_other,
                truth.ple.no_switch
            ],
            "{what}: directed-yield outcomes"
        );
        assert_eq!(
            p.per_vm.len(),
            truth.ple.per_vm.len().max(sim.config.vms.len())
        );
        for v in &p.per_vm {
            let tgid = v.tgid.expect("vm tgid").0;
            let c = truth.ple.per_vm.get(&tgid).copied().unwrap_or_default();
            assert_eq!(
                [v.total, v.sibling_preempted, v.all_running, v.siblings_idle],
                c,
                "{what}: VM {tgid}"
            );
            assert_eq!(
                v.yield_to_sibling,
                truth
                    .ple
                    .yield_to_sibling_per_vm
                    .get(&tgid)
                    .copied()
                    .unwrap_or(0),
                "{what}: VM {tgid} yields"
            );
            assert!(close(v.per_second, c[0] as f64 / secs));
        }
        assert_eq!(p.per_vcpu.len(), truth.ple.per_vcpu.len());
        for v in &p.per_vcpu {
            let c = truth.ple.per_vcpu[&v.tid.0];
            assert_eq!(
                [v.total, v.sibling_preempted, v.all_running, v.siblings_idle],
                c,
                "{what}: vCPU {}",
                v.tid
            );
            let t = sim.thread(v.tid.0).expect("vcpu thread");
            match t.kind {
                schedscope_sim::model::Kind::Vcpu { id, .. } => assert_eq!(v.vcpu, Some(id)),
                _ => panic!("{what}: {} is not a vCPU", v.tid),
            }
        }
        let exits: BTreeMap<i32, BTreeMap<u32, u64>> = p
            .exit_reasons
            .iter()
            .map(|vm| {
                let counts = vm.reasons.iter().map(|r| (r.code, r.count)).collect();
                (vm.tgid.expect("tgid").0, counts)
            })
            .collect();
        assert_eq!(exits, truth.exits, "{what}: exit reasons");
        for vm in &p.exit_reasons {
            for r in &vm.reasons {
                assert_eq!(r.time_ns, r.count * 3_000, "{what}: exit handling time");
                assert!(close(r.share, r.count as f64 / vm.total as f64));
            }
        }
    }
    let w = rep
        .waker_preempted
        .0
        .as_ref()
        .expect("waker-preempted section");
    let wt = &truth.waker_preempted;
    assert_eq!(w.total_ns, wt.total_ns, "{what}: waker-preempted total");
    assert_eq!(w.wakeups, wt.wakeups, "{what}: wakeups examined");
    assert!(
        wt.total_ns > 0,
        "{what}: scenario has no waker-preempted time"
    );
    let pairs: BTreeMap<(i32, i32), (u64, u64)> = w
        .pairs
        .iter()
        .map(|p| ((p.waker.0, p.wakee.0), (p.wakeups, p.waker_preempted_ns)))
        .collect();
    let tpairs: BTreeMap<(i32, i32), (u64, u64)> = wt
        .pairs
        .iter()
        .filter(|p| p.ns > 0)
        .map(|p| ((p.waker, p.wakee), (p.wakeups, p.ns)))
        .collect();
    assert_eq!(pairs, tpairs, "{what}: waker-preempted pairs");
    let procs: BTreeMap<i32, (u64, u64, u64)> = w
        .processes
        .iter()
        .map(|p| {
            (
                p.tgid.expect("tgid").0,
                (p.wakeups, p.sleep_ns, p.waker_preempted_ns),
            )
        })
        .collect();
    let tprocs: BTreeMap<i32, (u64, u64, u64)> = wt
        .processes
        .iter()
        .map(|p| (p.tgid, (p.wakeups, p.sleep_ns, p.ns)))
        .collect();
    assert_eq!(procs, tprocs, "{what}: waker-preempted per process");
}

fn check_scenario(name: &str, seed: u64) {
    let cfg = Config::scenario(name, seed).expect("scenario");
    let sim = simulate(&cfg);
    for (fmt, trace) in [("text", load_text(&sim)), ("perf.data", load_perf(&sim))] {
        let what = format!("{name}/{seed} via {fmt}");
        assert_eq!(trace.events.len(), sim.events.len(), "{what}: event count");
        let (g, l) = run(&trace, &[]);
        check_gangs(&sim.truth, &g.expect("gang section"), &what);
        check_lhp(&sim, &l.expect("lhp section"), &what);
    }
}

#[test]
fn mixed_vms_and_processes_match_ground_truth() {
    check_scenario("mixed", 1);
    check_scenario("mixed", 7);
    check_scenario("bare-metal", 1);
}

#[test]
fn ple_overcommit_scenarios_match_ground_truth() {
    check_scenario("ple-1x", 3);
    check_scenario("ple-2x", 3);
}

#[test]
fn gang_policies_match_ground_truth() {
    check_scenario("gang-baseline", 5);
    check_scenario("gang-cosched", 5);
}

#[test]
fn explicit_gangs_select_the_same_members() {
    let sim = simulate(&Config::scenario("mixed", 2).expect("scenario"));
    let trace = load_text(&sim);
    let vm0 = &sim.truth.gangs[0];
    let tids = vm0
        .members
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let spec = format!("tids={tids}");
    let (g, l) = run(&trace, &[&spec, "comm=^worker-p0$"]);
    let g = g.expect("gang");
    assert_eq!(g.gangs.len(), 2);
    assert_eq!(g.gangs[0].running_hist_ns, vm0.running_hist_ns);
    let p0 = sim
        .truth
        .gangs
        .iter()
        .find(|t| t.tgid == 5000)
        .expect("process 5000");
    assert_eq!(g.gangs[1].running_hist_ns, p0.running_hist_ns);
    assert_eq!(g.gangs[1].fragmented_ns, p0.fragmented_ns);
    // PLE siblings from the explicit gang: VM 0's exits classify as before.
    let p = l.expect("lhp").ple.0.expect("ple");
    assert_eq!(
        [
            p.per_vm[0].total,
            p.per_vm[0].sibling_preempted,
            p.per_vm[0].all_running,
            p.per_vm[0].siblings_idle
        ],
        sim.truth.ple.per_vm[&1000]
    );
    // pid= of a plain process gives its automatic gang.
    let (g, _) = run(&trace, &["pid=5100"]);
    let g = g.expect("gang");
    let p1 = sim
        .truth
        .gangs
        .iter()
        .find(|t| t.tgid == 5100)
        .expect("process 5100");
    assert_eq!(g.gangs[0].running_hist_ns, p1.running_hist_ns);
}

#[test]
fn invalid_gang_options_name_the_option() {
    let sim = simulate(&Config::scenario("mixed", 2).expect("scenario"));
    let trace = load_text(&sim);
    for (spec, needle) in [
        ("pid=99999", "does not appear"),
        ("pid=abc", "not a process id"),
        ("tids=1001,424242", "thread 424242"),
        ("comm=([", "bad regular expression"),
        ("comm=^nothing-matches$", "no thread"),
        ("cgroup=/never/seen", "never saw cgroup"),
        ("color=red", "unknown key"),
        ("justtext", "expected pid=N"),
    ] {
        let (g, l) = run(&trace, &[spec]);
        for err in [g.err(), l.err()] {
            match err {
                Some(AnalysisError::InvalidOption { option, detail }) => {
                    assert_eq!(option, format!("--gang-of {spec}"));
                    assert!(detail.contains(needle), "{spec}: {detail}");
                }
                other => panic!("{spec}: expected InvalidOption, got {other:?}"),
            }
        }
    }
}

#[test]
fn missing_events_are_named() {
    // A trace with only kvm events: both analyses name the sched events.
    let sim = simulate(&Config::scenario("ple-1x", 1).expect("scenario"));
    let text = ftrace::to_ftrace_text(&sim);
    let only_kvm: String = text
        .lines()
        .filter(|l| l.starts_with('#') || l.contains("kvm_e"))
        .map(|l| format!("{l}\n"))
        .collect();
    let trace = schedscope_parser::load_bytes("kvm-only.txt", only_kvm.as_bytes()).expect("decode");
    let (g, l) = run(&trace, &[]);
    match g {
        Err(AnalysisError::MissingEvents {
            missing,
            perf_command,
            ..
        }) => {
            assert!(missing.contains(&"sched:sched_switch".to_string()));
            assert!(perf_command.contains("sched:sched_switch"));
        }
        other => panic!("gang: expected MissingEvents, got {other:?}"),
    }
    // lhp: the PLE part needs sched_switch, the waker part sched_waking.
    let l = l.expect("lhp section with per-part errors");
    assert!(matches!(l.ple.0, Err(AnalysisError::MissingEvents { .. })));
    assert!(matches!(
        l.waker_preempted.0,
        Err(AnalysisError::MissingEvents { .. })
    ));
    // A bare-metal scenario has no kvm events: PLE names kvm:kvm_exit.
    let sim = simulate(&Config::scenario("bare-metal", 1).expect("scenario"));
    let (_, l) = run(&load_text(&sim), &[]);
    match l.expect("lhp").ple.0 {
        Err(AnalysisError::MissingEvents { missing, .. }) => {
            assert!(missing.contains(&"kvm:kvm_exit".to_string()))
        }
        other => panic!("expected MissingEvents for PLE, got {other:?}"),
    }
}

#[test]
fn perf_script_decodes_simulated_perf_data() {
    let Ok(out) = std::process::Command::new("perf").arg("--version").output() else {
        eprintln!("SKIP perf_script_decodes_simulated_perf_data: perf is not installed");
        return;
    };
    if !out.status.success() {
        eprintln!("SKIP perf_script_decodes_simulated_perf_data: perf --version failed");
        return;
    }
    let sim = simulate(&Config::scenario("mixed", 4).expect("scenario"));
    let dir = std::env::temp_dir().join(format!("schedscope-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join("sim.data");
    std::fs::write(&path, perf::to_perf_data(&sim).expect("perf.data")).expect("write");
    let out = std::process::Command::new("perf")
        .args(["script", "-F", "comm,tid,cpu,time,event,trace", "-i"])
        .arg(&path)
        .output()
        .expect("run perf script");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        sim.events.len(),
        "one line per simulated event"
    );
    // Count per event name and check field values of every kvm_exit and switch.
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &lines {
        let name = l
            .split_whitespace()
            .find(|w| w.starts_with("sched:") || w.starts_with("kvm:"))
            .unwrap_or("?")
            .trim_end_matches(':');
        *by_name.entry(name).or_default() += 1;
    }
    let mut expect: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &sim.events {
        use schedscope_sim::model::SimData::*;
        let n = match e.data {
            Switch { .. } => "sched:sched_switch",
            Waking { .. } => "sched:sched_waking",
            Wakeup { .. } => "sched:sched_wakeup",
            WakeupNew { .. } => "sched:sched_wakeup_new",
            Migrate { .. } => "sched:sched_migrate_task",
            KvmExit { .. } => "kvm:kvm_exit",
            KvmEntry { .. } => "kvm:kvm_entry",
            StatRuntime { .. } => "sched:sched_stat_runtime",
        };
        *expect.entry(n).or_default() += 1;
    }
    assert_eq!(by_name, expect);
    // The ftrace text and perf script agree on every event body.
    let ours = ftrace::to_ftrace_text(&sim);
    let bodies: Vec<&str> = ours
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once(": ").map(|x| x.1).unwrap_or(""))
        .map(|l| l.split_once(": ").map(|x| x.1).unwrap_or(""))
        .collect();
    let mut theirs: Vec<String> = lines
        .iter()
        .map(|l| {
            let i = l.find(" sched:").or_else(|| l.find(" kvm:")).unwrap_or(0);
            let rest = &l[i + 1..];
            rest.split_once(": ")
                .map(|x| x.1.trim().to_string())
                .unwrap_or_default()
        })
        .collect();
    let mut ours_sorted: Vec<String> = bodies.iter().map(|s| s.trim().to_string()).collect();
    theirs.sort();
    ours_sorted.sort();
    assert_eq!(
        theirs, ours_sorted,
        "perf script field values differ from the simulator's"
    );
}

#[test]
fn committed_fixtures_are_reproducible() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sim");
    for (name, seed) in [("mixed", 1), ("bare-metal", 1)] {
        let mut cfg = Config::scenario(name, seed).expect("scenario");
        cfg.ticks = 5000;
        let sim = simulate(&cfg);
        let stem = format!("{name}-s{seed}");
        let read = |ext: &str| {
            let p = dir.join(format!("{stem}.{ext}"));
            std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        assert!(
            read("txt") == ftrace::to_ftrace_text(&sim).into_bytes(),
            "{stem}.txt is stale; see fixtures/sim/README.md"
        );
        assert!(
            read("data") == perf::to_perf_data(&sim).expect("perf.data"),
            "{stem}.data is stale"
        );
        let truth = serde_json::to_string_pretty(&sim.truth).expect("json");
        assert!(
            read("truth.json") == truth.into_bytes(),
            "{stem}.truth.json is stale"
        );
        // And the analyses reproduce the stored truth from the stored perf.data.
        let trace =
            schedscope_parser::load(&dir.join(format!("{stem}.data"))).expect("load fixture");
        let (g, _) = run(&trace, &[]);
        check_gangs(&sim.truth, &g.expect("gang"), &stem);
    }
}

#[test]
fn old_kvm_text_format_gives_the_same_ple_numbers() {
    let sim = simulate(&Config::scenario("mixed", 3).expect("scenario"));
    let text = ftrace::to_ftrace_text_style(&sim, ftrace::KvmStyle::Old);
    assert!(text.contains("kvm_exit: reason PAUSE_INSTRUCTION rip 0x"));
    assert!(text.contains("kvm_exit: reason pause rip 0x"));
    let trace = schedscope_parser::load_bytes("old.txt", text.as_bytes()).expect("decode");
    let (g, l) = run(&trace, &[]);
    check_gangs(&sim.truth, &g.expect("gang"), "old kvm format");
    let p = l.expect("lhp").ple.0.expect("ple");
    assert_eq!(
        [p.total, p.sibling_preempted, p.all_running, p.siblings_idle],
        sim.truth.ple.counts
    );
    for v in &p.per_vcpu {
        assert_eq!(
            [v.total, v.sibling_preempted, v.all_running, v.siblings_idle],
            sim.truth.ple.per_vcpu[&v.tid.0]
        );
    }
}

#[test]
fn json_keys_and_text_verdicts() {
    let sim = simulate(&Config::scenario("mixed", 1).expect("scenario"));
    let trace = load_perf(&sim);
    with_ctx(&trace, &[], |ctx| {
        let g = gang::analyze(ctx).expect("gang");
        let l = lhp::analyze(ctx).expect("lhp");
        // The JSON keys named in issue 4 are a public contract.
        let gj = serde_json::to_value(&g).expect("gang json");
        for k in [
            "name",
            "tgid",
            "members",
            "corun_ratio",
            "demand_corun_ratio",
            "demand_ns",
            "fragmented_ns",
            "running_hist_ns",
            "pair_corun",
        ] {
            assert!(gj["gangs"][0].get(k).is_some(), "gang.gangs[0].{k}");
        }
        let lj = serde_json::to_value(&l).expect("lhp json");
        for k in [
            "total",
            "sibling_preempted",
            "all_running",
            "siblings_idle",
            "per_vm",
            "exit_reasons",
        ] {
            assert!(lj["ple"].get(k).is_some(), "lhp.ple.{k}");
        }
        for k in [
            "tgid",
            "name",
            "vcpus",
            "total",
            "sibling_preempted",
            "all_running",
            "siblings_idle",
            "per_second",
        ] {
            assert!(
                lj["ple"]["per_vm"][0].get(k).is_some(),
                "lhp.ple.per_vm[0].{k}"
            );
        }
        for k in ["total_ns", "pairs", "processes"] {
            assert!(
                lj["waker_preempted"].get(k).is_some(),
                "lhp.waker_preempted.{k}"
            );
        }
        assert_eq!(
            lj["ple"]["total"],
            serde_json::json!(sim.truth.ple.counts[0])
        );
        // Text: one verdict per gang first, with the truth's percentages.
        let mut out = Vec::new();
        g.render_text(
            &schedscope_render::TextOptions { top: ctx.opts.top },
            &mut out,
        )
        .expect("render gang");
        let text = String::from_utf8(out).expect("utf8");
        let vm0 = &sim.truth.gangs[0];
        assert!(vm0.demand_ns > 0, "VM 1000 had two vCPUs wanting a CPU");
        let verdict = format!(
            "VM 1000 (qemu-vm0): the vCPUs that wanted a CPU ran together {:.0}% of the time two or more wanted one (demand co-run); all 4 vCPUs co-ran {:.0}% of the time it ran; {:.0}% fragmented",
            vm0.demand_corun_ratio * 100.0,
            vm0.corun_ratio * 100.0,
            vm0.fragmented_ns as f64 * 100.0 / vm0.any_running_ns as f64
        );
        let first_lines: Vec<&str> = text.lines().take(sim.truth.gangs.len()).collect();
        assert!(
            first_lines.iter().any(|l| l.trim() == verdict),
            "{verdict} not in {first_lines:?}"
        );
        assert!(
            text.contains("running  time (ms)  share (%)"),
            "histogram table"
        );
        let mut out = Vec::new();
        l.render_text(
            &schedscope_render::TextOptions { top: ctx.opts.top },
            &mut out,
        )
        .expect("render lhp");
        let text = String::from_utf8(out).expect("utf8");
        let first = text.lines().next().unwrap_or("");
        assert!(
            first.contains(&format!("{} pause-loop exits", sim.truth.ple.counts[0])),
            "{first}"
        );
        assert!(
            text.contains("PAUSE_INSTRUCTION") && text.contains("pause"),
            "exit reasons in context"
        );
    })
}

#[test]
fn without_tgids_only_explicit_gangs() {
    let sim = simulate(&Config::scenario("mixed", 5).expect("scenario"));
    let text = ftrace::to_ftrace_text_without_tgid(&sim);
    assert!(!text.contains("(   1000)"), "TGID column left in");
    let trace = schedscope_parser::load_bytes("notgid.txt", text.as_bytes()).expect("decode");
    assert_eq!(trace.events.len(), sim.events.len());
    let (g, _) = run(&trace, &[]);
    let g = g.expect("gang");
    assert!(
        g.gangs.is_empty(),
        "automatic gangs without tgids: {:?}",
        g.gangs.iter().map(|g| &g.name).collect::<Vec<_>>()
    );
    assert!(
        g.note.as_deref().unwrap_or("").contains("--gang-of"),
        "{:?}",
        g.note
    );
    // Explicit gangs still work, and give PLE siblings.
    let vm0 = &sim.truth.gangs[0];
    let spec = format!(
        "tids={}",
        vm0.members
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let (g, l) = run(&trace, &[&spec]);
    let g = g.expect("gang");
    assert_eq!(g.gangs[0].running_hist_ns, vm0.running_hist_ns);
    assert_eq!(g.gangs[0].fragmented_ns, vm0.fragmented_ns);
    let p = l.expect("lhp").ple.0.expect("ple");
    let c = sim.truth.ple.per_vm[&1000];
    assert_eq!(
        [
            p.per_vm[0].total,
            p.per_vm[0].sibling_preempted,
            p.per_vm[0].all_running,
            p.per_vm[0].siblings_idle
        ],
        c
    );
    // pid= cannot be resolved without tgids, and says so.
    let (g, _) = run(&trace, &["pid=1000"]);
    match g {
        Err(AnalysisError::InvalidOption { detail, .. }) => {
            assert!(detail.contains("no process (tgid) information"), "{detail}")
        }
        other => panic!("expected InvalidOption, got {other:?}"),
    }
}

#[test]
fn exported_rows_add_up_to_the_truth() {
    use schedscope_analysis::lhp::{PleClass, YieldOutcome};
    let sim = simulate(&Config::scenario("mixed", 6).expect("scenario"));
    let trace = load_perf(&sim);
    with_ctx(&trace, &[], |ctx| {
        let defs = gang::resolve_gangs(ctx).expect("gangs");
        for (def, tg) in defs.iter().zip(&sim.truth.gangs) {
            let rows = gang::intervals(def, ctx.timeline, &trace);
            let mut hist = vec![0u64; def.members.len() + 1];
            let mut frag = 0;
            for r in &rows {
                let d = r.end_ns - r.start_ns;
                hist[r.running as usize] += d;
                if r.running >= 1 && r.running < r.active {
                    frag += d;
                }
            }
            assert_eq!(hist, tg.running_hist_ns, "{}", def.name);
            assert_eq!(frag, tg.fragmented_ns, "{}", def.name);
            assert!(
                rows.windows(2).all(|w| w[0].end_ns == w[1].start_ns),
                "contiguous"
            );
        }
        let exits = lhp::ple_exits(ctx).expect("ple exits");
        let count = |c: PleClass| exits.iter().filter(|e| e.class == c).count() as u64;
        assert_eq!(
            [
                exits.len() as u64,
                count(PleClass::SiblingPreempted),
                count(PleClass::AllRunning),
                count(PleClass::SiblingsIdle)
            ],
            sim.truth.ple.counts
        );
        let out = |o: YieldOutcome| exits.iter().filter(|e| e.outcome == o).count() as u64;
        assert_eq!(
            [
                out(YieldOutcome::ToSibling),
                out(YieldOutcome::ToOther),
                out(YieldOutcome::NoSwitch)
            ],
            [
                sim.truth.ple.to_sibling,
                sim.truth.ple.to_other,
                sim.truth.ple.no_switch
            ]
        );
        assert!(exits.windows(2).all(|w| w[0].ts <= w[1].ts));
    })
}
