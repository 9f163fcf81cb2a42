//! Generated perf.data files with known contents (written with the
//! `schedscope_perf_data::PerfDataWriter`): every field the decoder produces is
//! compared with what was written, including what perf 6.1 files lack
//! (cpumasks, kallsyms, the schedscope cgroup section, the R+ marker).

use schedscope_perf_data::abi;
use schedscope_perf_data::sections::encode_cgroup_samples;
use schedscope_perf_data::{AttrSpec, EventAttr, Features, PerfDataWriter, TracingData};
use schedscope_trace::{CgroupSample, Cpu, EventData, PrevState, Sym, Tid, Ts};
use std::io::Cursor;

// This kernel's sched_switch format, copied from tracefs (see fixtures/README.md).
const SWITCH: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/formats/sched/sched_switch/format"
));

// This kernel's ipi_send_cpumask format, copied from tracefs (see fixtures/README.md).
const CPUMASK: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/formats/ipi/ipi_send_cpumask/format"
));

/// An old kvm_exit without vcpu_id (as on 5.x kernels).
const KVM_EXIT_OLD: &str = "name: kvm_exit
ID: 900
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;
\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;
\tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;

print fmt: \"reason %s rip 0x%lx\", __print_symbolic(REC->exit_reason, { 40, \"PAUSE_INSTRUCTION\" }), REC->guest_rip
";

fn common(ty: u16, pid: i32, len: usize) -> Vec<u8> {
    let mut r = vec![0u8; len];
    r[0..2].copy_from_slice(&ty.to_le_bytes());
    r[4..8].copy_from_slice(&pid.to_le_bytes());
    r
}

fn comm16(r: &mut [u8], at: usize, s: &str) {
    r[at..at + s.len()].copy_from_slice(s.as_bytes());
}

#[allow(clippy::too_many_arguments)]
fn switch_raw(prev: (&str, i32, i32, i64), next: (&str, i32, i32)) -> Vec<u8> {
    let mut r = common(372, prev.1, 64);
    comm16(&mut r, 8, prev.0);
    r[24..28].copy_from_slice(&prev.1.to_le_bytes());
    r[28..32].copy_from_slice(&prev.2.to_le_bytes());
    r[32..40].copy_from_slice(&prev.3.to_le_bytes());
    comm16(&mut r, 40, next.0);
    r[56..60].copy_from_slice(&next.1.to_le_bytes());
    r[60..64].copy_from_slice(&next.2.to_le_bytes());
    r
}

#[test]
fn generated_file_decodes_to_what_was_written() {
    let attrs = vec![
        AttrSpec {
            attr: EventAttr::tracepoint(372),
            name: "sched:sched_switch".into(),
            ids: vec![101, 102],
        },
        AttrSpec {
            attr: EventAttr::tracepoint(353),
            name: "ipi:ipi_send_cpumask".into(),
            ids: vec![201, 202],
        },
        AttrSpec {
            attr: EventAttr::tracepoint(900),
            name: "kvm:kvm_exit".into(),
            ids: vec![301, 302],
        },
    ];
    let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), attrs).unwrap();
    w.comm(50, 50, "qemu-system-x86", 0).unwrap();
    w.fork(50, 50, 51, 50, 900).unwrap();
    w.comm(50, 51, "CPU 0/KVM", 950).unwrap();
    // written out of time order across CPUs: the decoder sorts
    w.sample_tracepoint(
        102,
        51,
        51,
        2_000,
        1,
        &switch_raw(("CPU 0/KVM", 51, 120, 0x100), ("swapper/1", 0, 120)),
    )
    .unwrap();
    w.sample_tracepoint(
        101,
        7,
        7,
        1_000,
        0,
        &switch_raw(("bash", 7, 120, 0x1), ("CPU 0/KVM", 51, 120)),
    )
    .unwrap();
    let mut ipi = common(353, 7, 48);
    ipi[8..12].copy_from_slice(&(32u32 | 16 << 16).to_le_bytes());
    ipi[16..24].copy_from_slice(&0xffff_ffff_8100_1000u64.to_le_bytes());
    ipi[24..32].copy_from_slice(&0xffff_ffff_8100_2010u64.to_le_bytes());
    ipi[32..40].copy_from_slice(&0b1010u64.to_le_bytes());
    ipi[40..48].copy_from_slice(&1u64.to_le_bytes());
    w.sample_tracepoint(201, 7, 7, 1_500, 0, &ipi).unwrap();
    w.sample_tracepoint(202, 7, 7, 1_600, 1, &ipi).unwrap();
    let mut kvm = common(900, 51, 28);
    kvm[8..12].copy_from_slice(&40u32.to_le_bytes());
    kvm[16..24].copy_from_slice(&0x1234u64.to_le_bytes());
    kvm[24..28].copy_from_slice(&1u32.to_le_bytes());
    w.sample_tracepoint(302, 50, 51, 1_700, 1, &kvm).unwrap();
    w.finished_round().unwrap();

    let mut td = TracingData {
        page_size: 4096,
        kallsyms:
            b"ffffffff81002000 T flush_tlb_func\nffffffff81001000 T smp_call_function_many_cond\n"
                .to_vec(),
        ..TracingData::default()
    };
    td.add_event_format("sched", SWITCH.as_bytes().to_vec());
    td.add_event_format("ipi", CPUMASK.as_bytes().to_vec());
    td.add_event_format("kvm", KVM_EXIT_OLD.as_bytes().to_vec());
    let cg = vec![
        CgroupSample {
            ts: Ts(1_000),
            path: "/batch".into(),
            quota_us: 50_000,
            period_us: 100_000,
            nr_periods: 3,
            nr_throttled: 2,
            throttled_ns: 12_345,
            usage_ns: Some(999),
        },
        CgroupSample {
            ts: Ts(2_000),
            path: "/a/longer/path".into(),
            quota_us: -1,
            period_us: 100_000,
            nr_periods: 0,
            nr_throttled: 0,
            throttled_ns: 0,
            usage_ns: None,
        },
    ];
    let features = Features {
        tracing_data: Some(td.to_bytes().unwrap()),
        hostname: Some("testhost".into()),
        osrelease: Some("6.18.0-test".into()),
        arch: Some("x86_64".into()),
        nr_cpus: Some((4, 2)),
        cmdline: vec!["schedscope".into(), "record".into()],
        extra: vec![(
            abi::feature::SCHEDSCOPE_CGROUP_SAMPLES,
            encode_cgroup_samples(&cg),
        )],
        ..Features::default()
    };
    let (out, _) = w.finish(&features).unwrap();
    let bytes = out.into_inner();

    let t = schedscope_parser::load_bytes("gen.data", &bytes).unwrap();
    assert!(t.warnings.is_empty(), "{:#?}", t.warnings);
    assert_eq!(t.events.len(), 5);
    let ts: Vec<u64> = t.events.iter().map(|e| e.ts.0).collect();
    assert_eq!(ts, vec![1_000, 1_500, 1_600, 1_700, 2_000]);
    assert_eq!(t.count("sched:sched_switch"), 2);
    assert_eq!(t.count("ipi:ipi_send_cpumask"), 2);
    assert_eq!(t.count("kvm:kvm_exit"), 1);

    match t.events[0].data {
        EventData::Switch {
            prev_tid,
            prev_state,
            prev_comm,
            next_tid,
            next_comm,
            ..
        } => {
            assert_eq!(prev_tid, Tid(7));
            assert_eq!(
                prev_state,
                PrevState {
                    bits: PrevState::S,
                    preempted: false
                }
            );
            assert_eq!(t.strings.get(prev_comm), "bash");
            assert_eq!(next_tid, Tid(51));
            assert_eq!(t.strings.get(next_comm), "CPU 0/KVM");
        }
        d => panic!("{d:?}"),
    }
    match t.events[4].data {
        EventData::Switch { prev_state, .. } => {
            assert_eq!(
                prev_state,
                PrevState {
                    bits: 0,
                    preempted: true
                }
            );
            assert_eq!(prev_state.to_text(), "R+");
        }
        d => panic!("{d:?}"),
    }
    assert_eq!(t.events[4].cpu, Cpu(1));
    match t.events[1].data {
        EventData::IpiSendCpumask {
            mask,
            callsite,
            callback,
        } => {
            let m = &t.cpumasks[mask.0 as usize];
            assert_eq!(m.iter().collect::<Vec<_>>(), vec![1, 3, 64]);
            assert_eq!(callsite, Sym::from_addr(0xffff_ffff_8100_1000));
            assert_eq!(t.sym_name(callback), "flush_tlb_func+0x10");
            assert_eq!(t.sym_name(callsite), "smp_call_function_many_cond");
        }
        d => panic!("{d:?}"),
    }
    // identical masks are stored once
    assert_eq!(t.cpumasks.len(), 1);
    match t.events[3].data {
        EventData::KvmExit {
            exit_reason,
            isa,
            vcpu_id,
            guest_rip,
        } => {
            assert_eq!((exit_reason, vcpu_id, guest_rip), (40, None, 0x1234));
            assert_eq!(isa, schedscope_trace::KvmIsa::Vmx);
        }
        d => panic!("{d:?}"),
    }
    assert_eq!(t.events[3].tid, Tid(51));
    assert_eq!(t.tasks.comm(Tid(51)), "CPU 0/KVM");
    assert_eq!(t.tasks.tgid(Tid(51)), Some(Tid(50)));
    assert_eq!(
        t.tasks.by_tid(Tid(51)).and_then(|k| k.fork_ts),
        Some(Ts(900))
    );
    assert_eq!(t.tasks.comm(Tid(7)), "bash");
    assert_eq!(t.cgroup_samples, cg);
    assert_eq!(t.kernel_symbols.syms.len(), 2);
    assert!(t.kernel_symbols.syms.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(t.meta.hostname.as_deref(), Some("testhost"));
    assert_eq!(t.meta.os_release.as_deref(), Some("6.18.0-test"));
    assert_eq!(t.meta.cmdline.as_deref(), Some("schedscope record"));
    assert_eq!(t.meta.nr_cpus_online, Some(2));
    assert_eq!(t.nr_cpus, 2);
}
