//! Tests of the ftrace / trace-cmd report / perf script text decoder against
//! independent oracles: plain text matching of the same files (grep-style
//! counts, field-by-field re-rendering), the same ring buffer written out by
//! tracefs and by trace-cmd, and perf.data decoded by the other decoder.
//!
//! Tests that need root, tracefs, perf or trace-cmd print why they skip.

use schedscope_parser::{load, load_bytes, ParseError};
use schedscope_trace::{Event, EventData, KvmIsa, PrevState, Severity, Tid, Trace, TraceFormat};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/ftrace")
        .join(name)
}

fn decode_str(text: &str) -> Trace {
    load_bytes("test.txt", text.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

/// The bare event name (`sched:sched_switch` -> `sched_switch`).
fn bare(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

/// Count events per bare name by plain text matching: the token ending in
/// `:` that follows the `SECS.FRAC:` timestamp token (what `grep -o` does).
fn grep_counts(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(i) = toks.iter().position(|t| {
            t.strip_suffix(':').is_some_and(|n| {
                n.split_once('.').is_some_and(|(a, b)| {
                    !a.is_empty()
                        && a.bytes().all(|c| c.is_ascii_digit())
                        && b.bytes().all(|c| c.is_ascii_digit())
                })
            })
        }) else {
            continue;
        };
        if let Some(ev) = toks.get(i + 1).and_then(|t| t.strip_suffix(':')) {
            *out.entry(bare(ev).to_string()).or_insert(0) += 1;
        }
    }
    out
}

fn decoded_counts(t: &Trace) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (k, v) in &t.events_by_name {
        *out.entry(bare(k).to_string()).or_insert(0) += v;
    }
    out
}

/// An event rendered with its strings resolved, to compare traces decoded
/// from different files. `states` false drops the R+ marker (trace-cmd's
/// plugin does not print it).
fn render(t: &Trace, e: &Event, preempt_marker: bool) -> String {
    let s = |id| t.strings.get(id).to_string();
    let data = match e.data {
        EventData::Switch {
            prev_tid,
            prev_prio,
            prev_state,
            prev_comm,
            next_tid,
            next_prio,
            next_comm,
        } => {
            let st = PrevState {
                preempted: prev_state.preempted && preempt_marker,
                ..prev_state
            };
            format!(
                "{}:{} [{prev_prio}] {} ==> {}:{} [{next_prio}]",
                s(prev_comm),
                prev_tid.0,
                st.to_text(),
                s(next_comm),
                next_tid.0
            )
        }
        EventData::Wakeup {
            kind,
            tid,
            comm,
            prio,
            target_cpu,
        } => format!(
            "{kind:?} {}:{} [{prio}] CPU:{}",
            s(comm),
            tid.0,
            target_cpu.0
        ),
        EventData::Migrate {
            tid,
            comm,
            orig_cpu,
            dest_cpu,
        } => format!("{}:{} {}->{}", s(comm), tid.0, orig_cpu.0, dest_cpu.0),
        EventData::Fork {
            parent_tid,
            child_tid,
            child_comm,
        } => format!("{} -> {}:{}", parent_tid.0, s(child_comm), child_tid.0),
        EventData::Exit { tid, comm } => format!("{}:{}", s(comm), tid.0),
        EventData::Exec { tid, filename } => format!("{} {}", tid.0, s(filename)),
        ref other => format!("{other:?}"),
    };
    format!(
        "{} [{}] {} {}: {}",
        e.ts.0,
        e.cpu.0,
        e.tid.0,
        bare(t.event_name(e.name)),
        data
    )
}

/// `prev_comm=.. ==> ..` as the kernel prints sched_switch.
fn switch_text(t: &Trace, e: &Event) -> Option<String> {
    match e.data {
        EventData::Switch {
            prev_tid,
            prev_prio,
            prev_state,
            prev_comm,
            next_tid,
            next_prio,
            next_comm,
        } => Some(format!(
            "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
            t.strings.get(prev_comm),
            prev_tid.0,
            prev_prio,
            prev_state.to_text(),
            t.strings.get(next_comm),
            next_tid.0,
            next_prio
        )),
        _ => None,
    }
}

/// Every sched_switch line of `text` (kernel key=value form) equals the
/// decoded event re-rendered; also checks the line's timestamp and CPU.
fn assert_switch_lines_round_trip(text: &str, t: &Trace) {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            !l.starts_with('#')
                && (l.contains(" sched_switch: ") || l.contains(" sched:sched_switch: "))
        })
        .collect();
    let mut evs: Vec<&Event> = t
        .events
        .iter()
        .filter(|e| matches!(e.data, EventData::Switch { .. }))
        .collect();
    assert_eq!(lines.len(), evs.len(), "sched_switch count");
    // The decoder sorts by time (stably); restore file order for the walk.
    let mut by_line: Vec<(u64, &str)> = Vec::new();
    for l in &lines {
        let ts_tok = l
            .split_whitespace()
            .find(|tok| {
                tok.ends_with(':')
                    && tok.contains('.')
                    && tok[..tok.len() - 1]
                        .replace('.', "")
                        .bytes()
                        .all(|c| c.is_ascii_digit())
            })
            .unwrap();
        let (a, b) = ts_tok.trim_end_matches(':').split_once('.').unwrap();
        let ns = a.parse::<u64>().unwrap() * 1_000_000_000
            + b.parse::<u64>().unwrap() * 10u64.pow(9 - b.len() as u32);
        by_line.push((ns, l));
    }
    by_line.sort_by_key(|x| x.0);
    evs.sort_by_key(|e| e.ts);
    for ((ns, line), e) in by_line.iter().zip(&evs) {
        assert_eq!(*ns, e.ts.0, "{line}");
        let body = line
            .split(" sched_switch: ")
            .nth(1)
            .or_else(|| line.split(" sched:sched_switch: ").nth(1))
            .unwrap();
        assert_eq!(switch_text(t, e).unwrap(), body.trim(), "{line}");
        let cpu = format!("[{:03}]", e.cpu.0);
        assert!(line.contains(&cpu), "{line} vs cpu {}", e.cpu.0);
    }
}

// ---------------------------------------------------------------- fixtures

/// counts.tsv: file, event, count, computed by `grep -o | awk` in capture.sh.
fn expected_counts() -> BTreeMap<String, BTreeMap<String, u64>> {
    let text = std::fs::read_to_string(fixture("counts.tsv")).unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        out.entry(f[0].to_string())
            .or_default()
            .insert(bare(f[1]).to_string(), f[2].parse().unwrap());
    }
    out
}

#[test]
fn fixtures_decode_with_the_recorded_counts() {
    let expected = expected_counts();
    assert_eq!(expected.len(), 5);
    for (file, counts) in &expected {
        let path = fixture(file);
        let t = load(&path).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(&decoded_counts(&t), counts, "{file}: counts.tsv");
        assert_eq!(decoded_counts(&t), grep_counts(&text), "{file}: grep");
        assert_eq!(t.events.len() as u64, counts.values().sum::<u64>());
        let want = if file.starts_with("tracecmd") {
            TraceFormat::TraceCmdText
        } else if file.starts_with("perf") {
            TraceFormat::PerfScriptText
        } else {
            TraceFormat::FtraceText
        };
        assert_eq!(t.format, want, "{file}");
        // Nothing skipped: only the ring-buffer loss warning (and, for
        // trace-cmd's plugin text, the note that it prints R+ as R) may appear.
        assert!(
            t.warnings
                .iter()
                .all(|w| w.message.contains("lost by the kernel")
                    || w.message.contains("sched_switch plugin prints a preempted")),
            "{file}: {:?}",
            t.warnings
        );
        // Every typed tracepoint came out typed.
        let others = t
            .events
            .iter()
            .filter(|e| matches!(e.data, EventData::Other(_)))
            .map(|e| bare(t.event_name(e.name)))
            .collect::<std::collections::BTreeSet<_>>();
        assert!(
            others.iter().all(|n| n.starts_with("local_timer")),
            "{file}: untyped {others:?}"
        );
        assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert_eq!(t.nr_cpus, 2, "{file}");
    }
}

/// perf script `-g` output: each event's call chain is the run of frame
/// lines under it, and kernel frames printed as `sym+0xoff` name the
/// address through the trace's kernel symbols.
#[test]
fn perf_script_call_chains() {
    let path = fixture("perf-script-callchain.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let t = load(&path).unwrap();
    // Independent walk: event lines start a chain, tab-indented lines extend it.
    let mut chains: Vec<(u64, Vec<(u64, String)>)> = Vec::new();
    for l in text.lines() {
        if let Some(f) = l.strip_prefix('\t') {
            let f = f.trim_start();
            let (addr, rest) = f.split_once(' ').unwrap();
            let sym = rest.rsplit_once(" (").unwrap().0.to_string();
            chains
                .last_mut()
                .unwrap()
                .1
                .push((u64::from_str_radix(addr, 16).unwrap(), sym));
        } else if !l.trim().is_empty() {
            let ts = l
                .split_whitespace()
                .find(|x| x.ends_with(':') && x.contains('.'))
                .unwrap();
            let ns = ts
                .trim_end_matches(':')
                .replace('.', "")
                .parse::<u64>()
                .unwrap();
            chains.push((ns, Vec::new()));
        }
    }
    assert_eq!(chains.len(), t.events.len());
    chains.sort_by_key(|c| c.0);
    let mut kernel_frames = 0;
    for (e, (ns, frames)) in t.events.iter().zip(&chains) {
        assert_eq!(e.ts.0, *ns);
        let stack = t.stack(e.stack).unwrap_or(&[]);
        let addrs: Vec<u64> = frames.iter().map(|f| f.0).collect();
        assert_eq!(stack, &addrs[..], "event at {ns}");
        for (addr, sym) in frames {
            if *addr >= 0xffff_0000_0000_0000 && !sym.starts_with('[') {
                assert_eq!(&t.sym_name(schedscope_trace::Sym::from_addr(*addr)), sym);
                kernel_frames += 1;
            }
        }
    }
    assert!(kernel_frames > 500, "{kernel_frames}");
    assert!(!t.stacks.is_empty() && t.stacks.len() < t.events.len() * 2);
}

#[test]
fn ftrace_names_get_their_systems() {
    let t = load(&fixture("tracefs-ipi-tgid.txt")).unwrap();
    for n in [
        "sched:sched_switch",
        "sched:sched_waking",
        "ipi:ipi_send_cpu",
        "csd:csd_queue_cpu",
        "csd:csd_function_entry",
        "tlb:tlb_flush",
        "irq:softirq_raise",
        "irq_vectors:reschedule_entry",
        "irq_vectors:call_function_single_exit",
        "irq_vectors:local_timer_entry",
    ] {
        assert!(t.count(n) > 0, "{n}: {:?}", t.events_by_name);
    }
    // A name we do not know stays bare.
    let u = decode_str("  a-1 [000] .... 1.000001: rcu_utilization: Start context switch\n");
    assert_eq!(u.count("rcu_utilization"), 1);
    assert_eq!(u.events[0].data, EventData::Other(None));
}

#[test]
fn entries_header_gives_lost_and_tgid_column_fills_tasks() {
    let path = fixture("tracefs-ipi-tgid.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let t = load(&path).unwrap();
    // `# entries-in-buffer/entries-written: A/B`: ftrace overwrote B - A.
    let hdr = text
        .lines()
        .find(|l| l.starts_with("# entries-in-buffer"))
        .unwrap();
    let ab = hdr.split_whitespace().nth(2).unwrap();
    let (a, b) = ab.split_once('/').unwrap();
    let lost = b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap();
    assert!(lost > 0);
    assert_eq!(t.lost, lost);
    assert!(t
        .warnings
        .iter()
        .any(|w| w.severity == Severity::DataLoss && w.count == lost));
    // `comm-TID (TGID)`: every line's tgid is in the task table.
    let mut checked = 0;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let (left, rest) = l.split_once(')').unwrap();
        let (task, tgid) = left.rsplit_once('(').unwrap();
        let tid: i32 = task.trim().rsplit_once('-').unwrap().1.parse().unwrap();
        let tgid = tgid.trim();
        if tgid.starts_with('-') || tid == 0 {
            continue;
        }
        assert!(rest.contains('['));
        assert_eq!(
            t.tasks.tgid(Tid(tid)),
            Some(Tid(tgid.parse().unwrap())),
            "{l}"
        );
        checked += 1;
    }
    assert!(checked > 100);
    assert_eq!(t.meta.nr_cpus_online, Some(2));
}

#[test]
fn tracefs_sched_switch_lines_round_trip() {
    for f in [
        "tracefs-sched.txt",
        "tracefs-ipi-tgid.txt",
        "perf-script.txt",
    ] {
        let path = fixture(f);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_switch_lines_round_trip(&text, &load(&path).unwrap());
    }
}

#[test]
fn tracefs_text_and_trace_cmd_report_of_one_buffer_agree() {
    let a = load(&fixture("tracefs-sched.txt")).unwrap();
    let b = load(&fixture("tracecmd-sched.txt")).unwrap();
    assert_eq!(a.format, TraceFormat::FtraceText);
    assert_eq!(b.format, TraceFormat::TraceCmdText);
    let ra: Vec<String> = a.events.iter().map(|e| render(&a, e, false)).collect();
    let rb: Vec<String> = b.events.iter().map(|e| render(&b, e, false)).collect();
    assert_eq!(ra.len(), rb.len());
    for (x, y) in ra.iter().zip(&rb) {
        assert_eq!(x, y);
    }
    // States other than R/S occur (I and Z, printed W and X by trace-cmd).
    let states: std::collections::BTreeSet<String> = b
        .events
        .iter()
        .filter_map(|e| match e.data {
            EventData::Switch { prev_state, .. } => Some(prev_state.to_text()),
            _ => None,
        })
        .collect();
    assert!(states.len() >= 2, "{states:?}");
    // Task comms agree.
    for task in a.tasks.iter() {
        assert_eq!(b.tasks.comm(task.tid), task.comm, "tid {}", task.tid);
    }
}

// ------------------------------------------------- public trace-cmd samples

/// `trace-cmd report` output published in a trace-cmd tutorial (Ubuntu
/// 16.04 VM, 2 CPUs): short sched_switch/sched_wakeup forms with
/// `success=1`, `D|W` and `x` states, `kworker/u4:0` comms.
const TRACE_CMD_SAMPLE: &str = "version = 6
cpus=2
              ls-2952  [001]  3343.171802: sched_wakeup:         migration/1:12 [0] success=1 CPU:001
              ls-2952  [001]  3343.171814: sched_switch:         trace-cmd:2952 [120] R ==> migration/1:12 [0]
     migration/1-12    [001]  3343.171816: sched_migrate_task:   comm=trace-cmd pid=2952 prio=120 orig_cpu=1 dest_cpu=0
              ls-2952  [000]  3343.171928: sched_switch:         trace-cmd:2952 [120] D|W ==> swapper/0:0 [120]
    kworker/u4:0-6     [001]  3343.176371: sched_wakeup:         sshd:1683 [120] success=1 CPU:001
    kworker/u4:0-6     [001]  3343.176373: sched_switch:         kworker/u4:0:6 [120] S ==> sshd:1683 [120]
              ls-2952  [000]  3343.176396: sched_switch:         ls:2952 [120] x ==> trace-cmd:2949 [120]
";

#[test]
fn trace_cmd_public_sample() {
    let t = decode_str(TRACE_CMD_SAMPLE);
    assert_eq!(t.format, TraceFormat::TraceCmdText);
    assert_eq!(t.count("sched:sched_switch"), 4);
    assert_eq!(t.count("sched:sched_wakeup"), 2);
    assert_eq!(t.count("sched:sched_migrate_task"), 1);
    // Only the note that the plugin prints R+ as R (one R switch-out).
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].message.contains("counts all 1 R switch-outs"));
    let r: Vec<String> = t.events.iter().map(|e| render(&t, e, true)).collect();
    assert_eq!(
        r[0],
        "3343171802000 [1] 2952 sched_wakeup: Wakeup migration/1:12 [0] CPU:1"
    );
    // trace-cmd prints the kernel's I (0x80) as W: `D|W` is D|I.
    assert_eq!(
        r[3],
        "3343171928000 [0] 2952 sched_switch: trace-cmd:2952 [120] D|I ==> swapper/0:0 [120]"
    );
    assert_eq!(
        r[5],
        "3343176373000 [1] 6 sched_switch: kworker/u4:0:6 [120] S ==> sshd:1683 [120]"
    );
    assert_eq!(t.tasks.comm(Tid(6)), "kworker/u4:0");
    assert_eq!(t.tasks.comm(Tid(1683)), "sshd");
    assert_eq!(t.nr_cpus, 2);
}

/// kvm_exit / kvm_entry lines as posted to the kvm mailing list (old
/// `reason X rip 0x.. info A B` form, VMX and SVM), plus the current 6.x form
/// and qemu vCPU thread names (`CPU 0/KVM`).
#[test]
fn kvm_lines_old_and_new() {
    let text = "\
 qemu-system-x86-23579 [005] 22018.775584: kvm_exit:             reason EPT_VIOLATION rip 0xfffff802987d6169 info 181 0
 qemu-system-x86-6660  [007]   398.691444: kvm_entry:            vcpu 3
 qemu-system-x86-310143 [064] 28714.545983: kvm_exit:             reason EXIT_NPF rip 0x0 info 1680000007 1729a1000
           <...>-43752 [001]  3615.602302: kvm_exit:             reason EXIT_EXCP_GP rip 0x4015c2 info 6a 0
       CPU 0/KVM-4242  [003] d..1. 22019.000001: kvm_exit: vcpu 0 reason PAUSE_INSTRUCTION rip 0xffffffff81b2c3a4 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000 requests 0x0000000000000000
       CPU 1/KVM-4243  [004] d..1. 22019.000002: kvm_exit: vcpu 1 reason pause rip 0xffffffff81b2c3a4 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000 requests 0x0000000000000000
       CPU 0/KVM-4242  [003] d..1. 22019.000003: kvm_entry: vcpu 0, rip 0xffffffff81b2c3a4 intr_info 0x80000030 error_code 0x00000000
";
    let t = decode_str(text);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let exits: Vec<_> = t
        .events
        .iter()
        .filter_map(|e| match e.data {
            EventData::KvmExit {
                exit_reason,
                isa,
                vcpu_id,
                guest_rip,
            } => Some((e.tid.0, exit_reason, isa, vcpu_id, guest_rip)),
            _ => None,
        })
        .collect();
    assert_eq!(
        exits,
        vec![
            (43752, 0x4d, KvmIsa::Svm, None, 0x4015c2),
            (23579, 48, KvmIsa::Vmx, None, 0xfffff802987d6169),
            (4242, 40, KvmIsa::Vmx, Some(0), 0xffffffff81b2c3a4),
            (4243, 0x77, KvmIsa::Svm, Some(1), 0xffffffff81b2c3a4),
            (310143, 0x400, KvmIsa::Svm, None, 0),
        ]
    );
    assert_eq!(t.tasks.comm(Tid(4242)), "CPU 0/KVM");
    assert_eq!(t.tasks.comm(Tid(4243)), "CPU 1/KVM");
    assert_eq!(t.tasks.comm(Tid(23579)), "qemu-system-x86");
    assert_eq!(t.count("kvm:kvm_entry"), 2);
    assert_eq!(t.count("kvm:kvm_exit"), 5);
}

#[test]
fn perf_script_pid_tid_form_and_callchains() {
    let text = "\
            perf  8672/8673  [000]   369.561700:   sched:sched_switch: prev_comm=perf prev_pid=8673 prev_prio=120 prev_state=D ==> next_comm=migration/0 next_pid=18 next_prio=0
\tffffffff81b2d8e1 __schedule+0x421 ([kernel.kallsyms])
\tffffffff81b2e0a3 schedule+0x33 ([kernel.kallsyms])

     migration/0    18/18    [000]   369.561705:   sched:sched_waking: comm=perf pid=8672 prio=120 target_cpu=000
            perf  8672/8673  [001]   369.561800:   sched:sched_switch: perf:8673 [120] R+ ==> swapper/1:0 [120]
";
    let t = decode_str(text);
    assert_eq!(t.format, TraceFormat::PerfScriptText);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(t.events.len(), 3);
    assert_eq!(
        t.stack(t.events[0].stack),
        Some(&[0xffffffff81b2d8e1, 0xffffffff81b2e0a3][..])
    );
    assert_eq!(t.stack(t.events[1].stack), None);
    assert_eq!(
        t.sym_name(schedscope_trace::Sym::from_addr(0xffffffff81b2d8e1)),
        "__schedule+0x421"
    );
    assert_eq!(t.tasks.tgid(Tid(8673)), Some(Tid(8672)));
    assert_eq!(t.tasks.tgid(Tid(18)), Some(Tid(18)));
    match t.events[2].data {
        EventData::Switch { prev_state, .. } => {
            assert!(prev_state.preempted && prev_state.is_runnable())
        }
        ref o => panic!("{o:?}"),
    }
}

#[test]
fn ipi_send_cpumask_forms() {
    let text = "\
  a-1 [002] d..1. 10.000001: ipi_send_cpumask: cpumask=0-3,5 callsite=smp_call_function_many_cond+0x1a4/0x4f0 callback=flush_tlb_func+0x0/0x30
  a-1 [002] d..1. 10.000002: ipi_send_cpumask: cpumask= callsite=x+0x1/0x2 callback=y+0x0/0x30
";
    let t = decode_str(text);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    match t.events[0].data {
        EventData::IpiSendCpumask {
            mask,
            callsite,
            callback,
        } => {
            assert_eq!(
                t.cpumasks[mask.0 as usize].iter().collect::<Vec<_>>(),
                vec![0, 1, 2, 3, 5]
            );
            assert_eq!(t.sym_name(callsite), "smp_call_function_many_cond");
            assert_eq!(t.sym_name(callback), "flush_tlb_func");
        }
        ref o => panic!("{o:?}"),
    }
    // perf 6.1 cannot print __get_cpumask: empty mask plus one counted warning.
    let perf = "\
  kworker/0:1    33 [000] 10.000000001: ipi:ipi_send_cpumask: [FAILED TO PARSE] cpumask=ARRAY[03, 00, 00, 00, 00, 00, 00, 00] callsite=18446744071581999652 callback=18446744071579000000
  kworker/0:1    33 [000] 10.000000002: ipi:ipi_send_cpumask: [FAILED TO PARSE] cpumask=ARRAY[03, 00, 00, 00, 00, 00, 00, 00] callsite=18446744071581999652 callback=18446744071579000000
";
    let t = decode_str(perf);
    assert_eq!(t.count("ipi:ipi_send_cpumask"), 2);
    assert_eq!(t.warnings.len(), 1);
    assert_eq!(t.warnings[0].count, 2);
    assert!(t.warnings[0].message.contains("first at line 1"));
    match t.events[0].data {
        EventData::IpiSendCpumask { mask, callsite, .. } => {
            assert_eq!(t.cpumasks[mask.0 as usize].count(), 0);
            assert_eq!(callsite.addr(), Some(18446744071581999652));
        }
        ref o => panic!("{o:?}"),
    }
}

// ------------------------------------------------------------- bad input

#[test]
fn not_a_trace_is_unknown_format() {
    for data in [
        &b"hello\nworld\n"[..],
        b"\x7fELF\x02\x01\x01\x00\x00\x00",
        b"# just a comment\n",
        &[0xff, 0xfe, 0x00, 0x80, 0x10][..],
    ] {
        match load_bytes("junk.bin", data) {
            Err(ParseError::UnknownFormat { path, .. }) => assert_eq!(path, "junk.bin"),
            other => panic!("{:?}", other.map(|t| t.events.len())),
        }
    }
    assert!(matches!(
        load_bytes("e", b""),
        Err(ParseError::Empty { .. })
    ));
}

#[test]
fn bad_lines_in_the_middle_are_counted_with_the_first_line_number() {
    let text = "# tracer: nop
  a-1 [000] .... 1.000001: sched_waking: comm=b pid=2 prio=120 target_cpu=000
this line is not an event
  a-1 [000] .... 1.000002: sched_waking: comm=b pid=NOTANUMBER prio=120 target_cpu=000
  a-1 [000] .... 1.000003: sched_waking: comm=b pid=2 prio=120 target_cpu=001
neither is this one
";
    let mut bytes = text.as_bytes().to_vec();
    bytes.extend_from_slice(b"\xff\xfe invalid utf-8 [000] 1.0: x:\n");
    bytes.extend_from_slice(
        b"  a-1 [001] .... 1.000004: sched_waking: comm=b pid=2 prio=120 target_cpu=001",
    );
    let t = load_bytes("t.txt", &bytes).unwrap();
    // All four event lines are counted; the bad body is kept untyped.
    assert_eq!(t.count("sched:sched_waking"), 4);
    assert_eq!(t.events.len(), 4);
    assert!(matches!(t.events[1].data, EventData::Other(None)));
    let msgs: Vec<(&str, u64)> = t
        .warnings
        .iter()
        .map(|w| (w.message.as_str(), w.count))
        .collect();
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert!(
        msgs.iter()
            .any(|(m, c)| *c == 2 && m.contains("first at line 3")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|(m, c)| *c == 1 && m.contains("UTF-8") && m.contains("line 7")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|(m, c)| *c == 1 && m.contains("sched:sched_waking") && m.contains("line 4")),
        "{msgs:?}"
    );
}

/// Deterministic mutations of a real fixture never panic and never yield
/// more events than lines.
#[test]
fn mutated_fixtures_never_panic() {
    let base = std::fs::read(fixture("tracecmd-sched.txt")).unwrap();
    let perf = std::fs::read(fixture("perf-script.txt")).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // SCHEDSCOPE_MUTATION_ROUNDS raises the default 300 for a longer local run.
    let rounds: u64 = std::env::var("SCHEDSCOPE_MUTATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let tgid = std::fs::read(fixture("tracefs-ipi-tgid.txt")).unwrap();
    for round in 0..rounds {
        let src = match round % 3 {
            0 => &base,
            1 => &perf,
            _ => &tgid,
        };
        let mut d = src[..(rnd() as usize % src.len()).clamp(1, 4000)].to_vec();
        for _ in 0..(rnd() % 20) {
            let i = rnd() as usize % d.len();
            d[i] = match rnd() % 4 {
                0 => rnd() as u8,
                1 => b' ',
                2 => b'\n',
                _ => b"[]:-=0123456789"[rnd() as usize % 15],
            };
        }
        if let Ok(t) = load_bytes("fuzz", &d) {
            let lines = d.split(|&c| c == b'\n').count();
            assert!(t.events.len() <= lines);
        }
    }
}

// ------------------------------------------------------ live (root) tests

/// Run a shell command, returning false (and saying why) if it failed.
fn sh(cmd: &str) -> bool {
    match Command::new("sh").arg("-c").arg(cmd).status() {
        Ok(s) if s.success() => true,
        Ok(s) => {
            eprintln!("`{cmd}` failed: {s}");
            false
        }
        Err(e) => {
            eprintln!("`{cmd}` could not run: {e}");
            false
        }
    }
}

/// A tracefs instance removed on drop.
struct Instance(PathBuf);

impl Instance {
    fn new(name: &str) -> Option<Instance> {
        let root = Path::new("/sys/kernel/tracing/instances");
        if !root.is_dir() {
            eprintln!("SKIP: /sys/kernel/tracing is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");
            return None;
        }
        let dir = root.join(format!("{name}-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir(&dir) {
            eprintln!(
                "SKIP: cannot create tracefs instance {} (needs root): {e}",
                dir.display()
            );
            return None;
        }
        Some(Instance(dir))
    }
    fn write(&self, rel: &str, val: &str) {
        let p = self.0.join(rel);
        std::fs::write(&p, val).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn live_tracefs_capture_matches_line_counts() {
    if !schedscope_testkit::perf_works() {
        eprintln!("SKIP: perf is not installed");
        return;
    }
    for tgid in [false, true] {
        let Some(inst) = Instance::new("schedscope-ftrace-test") else {
            return;
        };
        inst.write("options/record-tgid", if tgid { "1" } else { "0" });
        inst.write("buffer_size_kb", "4096");
        for e in [
            "sched/sched_switch",
            "sched/sched_waking",
            "sched/sched_wakeup",
            "sched/sched_migrate_task",
            "tlb/tlb_flush",
            "ipi",
        ] {
            inst.write(&format!("events/{e}/enable"), "1");
        }
        inst.write("trace", "");
        inst.write("tracing_on", "1");
        let ok = sh("perf bench sched messaging -g 2 -l 30 >/dev/null 2>&1");
        inst.write("tracing_on", "0");
        assert!(ok, "perf bench failed");
        let text = std::fs::read_to_string(inst.0.join("trace")).unwrap();
        let t = load_bytes("live-trace", text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.format, TraceFormat::FtraceText);
        let grep = grep_counts(&text);
        assert!(
            grep.get("sched_switch").copied().unwrap_or(0) > 100,
            "{grep:?}"
        );
        assert_eq!(decoded_counts(&t), grep, "record-tgid={tgid}");
        eprintln!(
            "live capture (record-tgid={tgid}): {grep:?}, lost {}",
            t.lost
        );
        assert!(
            t.warnings
                .iter()
                .all(|w| w.message.contains("lost by the kernel")),
            "{:?}",
            t.warnings
        );
        assert_switch_lines_round_trip(&text, &t);
        if tgid {
            assert!(t.tasks.iter().filter(|k| k.tgid.is_some()).count() > 10);
        }
    }
}

#[test]
fn perf_script_text_equals_perf_data() {
    if !schedscope_testkit::perf_works() {
        eprintln!("SKIP: perf is not installed");
        return;
    }
    if !Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists() {
        eprintln!(
            "SKIP: tracefs with sched events is not available (perf record -e sched:* needs it)"
        );
        return;
    }
    let dir = schedscope_testkit::tmpdir("ftrace-eq");
    let data = dir.join("perf.data");
    let txt = dir.join("perf.txt");
    let rec = format!(
        "perf record -q -e sched:sched_switch,sched:sched_waking,sched:sched_wakeup -a -o {} -- perf bench sched messaging -g 2 -l 30 >/dev/null 2>&1",
        data.display()
    );
    if !sh(&rec) {
        eprintln!("SKIP: perf record failed (needs root / perf_event_paranoid)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    assert!(sh(&format!(
        "perf script -i {} --ns > {} 2>/dev/null",
        data.display(),
        txt.display()
    )));
    let from_text = load(&txt).unwrap_or_else(|e| panic!("{e}"));
    let from_data = load(&data);
    let _ = std::fs::remove_dir_all(&dir);
    let from_data = from_data.unwrap_or_else(|e| panic!("perf.data decoder: {e}"));
    assert_eq!(from_text.format, TraceFormat::PerfScriptText);
    assert!(from_text.warnings.is_empty(), "{:?}", from_text.warnings);
    eprintln!(
        "perf script text: {:?}; perf.data: {:?}",
        from_text.events_by_name, from_data.events_by_name
    );
    assert_eq!(from_text.events_by_name, from_data.events_by_name);
    let sw = |t: &Trace| -> Vec<String> {
        t.events
            .iter()
            .filter(|e| matches!(e.data, EventData::Switch { .. }))
            .map(|e| render(t, e, true))
            .collect()
    };
    let (a, b) = (sw(&from_text), sw(&from_data));
    assert!(a.len() > 100);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y);
    }
}

/// Throughput figure, not a check: with `SCHEDSCOPE_BENCH_TEXT=FILE` set,
/// decode FILE and print MB/s and events/s (run with `--release
/// --nocapture`). Without the variable it only says so.
#[test]
fn throughput_figure() {
    let Some(path) = std::env::var_os("SCHEDSCOPE_BENCH_TEXT") else {
        eprintln!("SKIP: set SCHEDSCOPE_BENCH_TEXT=FILE to print decode throughput for FILE");
        return;
    };
    let path = PathBuf::from(path);
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let start = std::time::Instant::now();
    let t = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{}: {} ({} bytes), {} events, {} tasks, {:.3} s, {:.0} MB/s, {:.2} M events/s, {} threads",
        path.display(),
        t.format.as_str(),
        bytes,
        t.events.len(),
        t.tasks.len(),
        secs,
        bytes as f64 / secs / 1e6,
        t.events.len() as f64 / secs / 1e6,
        rayon::current_num_threads()
    );
    for w in &t.warnings {
        eprintln!("  warning ({:?}, x{}): {}", w.severity, w.count, w.message);
    }
}
