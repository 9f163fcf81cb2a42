//! HEADER_CPU_TOPOLOGY (perf.data feature 13) into `Trace::topology`:
//! on a real `perf record` file against `perf report --header-only -I`,
//! and on a generated 64-CPU, 2-package file (which perf must read the
//! same way).

use schedscope_perf_data::topology::CpuTopology;
use schedscope_perf_data::{AttrSpec, EventAttr, Features, PerfDataWriter, TracingData};
use std::io::Cursor;
use std::path::Path;
use std::process::Command;

/// What `perf report --header-only -I` prints of `file`'s topology
/// (sibling sockets, dies and threads, per-CPU ids), or None without perf.
fn perf_header(file: &Path) -> Option<CpuTopology> {
    if !schedscope_testkit::perf_works() {
        return None;
    }
    let out = Command::new("perf")
        .args(["report", "--header-only", "-I", "-i"])
        .arg(file)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "perf report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut sockets, mut dies, mut threads, mut cpus) = (vec![], vec![], vec![], vec![]);
    for l in text.lines() {
        let l = l.trim_start_matches('#').trim();
        let val = |p: &str| {
            l.strip_prefix(p)
                .map(|v| v.trim_start().trim_start_matches(':').trim().to_string())
        };
        if let Some(v) = val("sibling sockets") {
            sockets.push(v);
        } else if let Some(v) = val("sibling dies") {
            dies.push(v);
        } else if let Some(v) = val("sibling threads") {
            threads.push(v);
        } else if let Some(rest) = l.strip_prefix("CPU ") {
            // "CPU 0: Core ID 0, Die ID 0, Socket ID 0"
            let num = |k: &str| -> Option<u32> {
                let i = rest.find(k)? + k.len();
                rest[i..]
                    .trim()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse()
                    .ok()
            };
            if let (Some(core), Some(sock)) = (num("Core ID"), num("Socket ID")) {
                cpus.push((core, num("Die ID"), sock));
            }
        }
    }
    Some(CpuTopology {
        package_cpus: sockets,
        die_cpus: dies,
        core_cpus: threads,
        cpus,
    })
}

#[test]
fn real_recording_topology_matches_perf() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/perf/sched_small.data");
    let t = schedscope_parser::load(&file).expect("fixture loads");
    let topo = t.topology.expect("perf 6.1 writes HEADER_CPU_TOPOLOGY");
    // what the fixture's README says: 2 CPUs
    assert_eq!(topo.groups(2).expect("lists parse"), vec![vec![0, 1]]);
    let Some(perf) = perf_header(&file) else {
        eprintln!("SKIPPED perf comparison: perf is not installed");
        return;
    };
    assert_eq!(topo, perf);
}

// This kernel's sched_switch format, copied from tracefs (see fixtures/README.md).
const SWITCH: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/formats/sched/sched_switch/format"
));

/// A perf.data file with one COMM record, the sched_switch format (perf
/// reads no file with a tracepoint attr and no tracing data) and
/// `features`.
fn file_with(mut features: Features) -> Vec<u8> {
    let formats = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/formats");
    let mut td = TracingData {
        page_size: 4096,
        header_page: std::fs::read(format!("{formats}/header_page")).unwrap(),
        header_event: std::fs::read(format!("{formats}/header_event")).unwrap(),
        ..TracingData::default()
    };
    td.add_event_format("sched", SWITCH.as_bytes().to_vec());
    features.tracing_data = Some(td.to_bytes().unwrap());
    let attrs = vec![AttrSpec {
        attr: EventAttr::tracepoint(372),
        name: "sched:sched_switch".into(),
        ids: vec![101],
    }];
    let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), attrs).unwrap();
    w.comm(1, 1, "init", 1_000).unwrap();
    w.finished_round().unwrap();
    let (out, _) = w.finish(&features).unwrap();
    out.into_inner()
}

#[test]
fn generated_64_cpu_file_round_trips_and_perf_reads_it() {
    let want = CpuTopology::two_packages_example();
    let bytes = file_with(Features {
        nr_cpus: Some((64, 64)),
        cpu_topology: Some(want.clone()),
        ..Features::default()
    });
    let t = schedscope_parser::load_bytes("gen64.data", &bytes).unwrap();
    assert_eq!(t.topology.as_ref(), Some(&want));
    let dir = schedscope_testkit::tmpdir("topo64");
    let file = dir.join("gen64.data");
    std::fs::write(&file, &bytes).unwrap();
    let Some(perf) = perf_header(&file) else {
        eprintln!("SKIPPED perf comparison: perf is not installed");
        return;
    };
    assert_eq!(perf, want);
}

#[test]
fn a_section_at_odds_with_the_cpu_count_is_a_warning_naming_it() {
    // per-CPU ids for 64 CPUs in a file that says 65 are available: the
    // 65th id eats into the die list, which then does not parse
    let bytes = file_with(Features {
        nr_cpus: Some((65, 64)),
        cpu_topology: Some(CpuTopology::two_packages_example()),
        ..Features::default()
    });
    let t = schedscope_parser::load_bytes("bad.data", &bytes).unwrap();
    assert_eq!(t.topology, None);
    let w: Vec<&str> = t.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        w.iter()
            .any(|m| m.starts_with("perf HEADER_CPU_TOPOLOGY section (byte offset ")),
        "{w:?}"
    );
}
