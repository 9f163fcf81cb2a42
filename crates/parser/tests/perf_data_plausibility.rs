//! Decoded values checked against what the file itself says: a sample
//! naming a CPU beyond the file's CPU count (HEADER_NRCPUS), or with a time
//! far from its neighbours' in the record stream, is skipped and counted in
//! one warning. These are the damages that made `report --all` abort
//! (an 81 GB allocation for "58881 CPUs") or run for minutes (a span of
//! 576 million seconds). The expected events are the undamaged file's
//! minus the damaged sample, found by an independent walk over the records.

use schedscope_parser::perf_data::header::{read_attrs, FileHeader};
use schedscope_trace::{Severity, Trace};
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perf")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn u64_at(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(d[o..o + 8].try_into().unwrap())
}

const SAMPLE: u32 = 9;

/// Offsets of the TIME and CPU fields in a SAMPLE record (from its
/// header) of this sample_type.
fn offsets(st: u64) -> Option<(usize, usize)> {
    // PERF_SAMPLE_IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU
    let bit = |b: u32| st & (1 << b) != 0;
    if !(bit(2) && bit(7)) {
        return None;
    }
    let mut p = 8; // record header
    for b in [16, 0, 1] {
        if bit(b) {
            p += 8;
        }
    }
    let time = p;
    p += 8;
    for b in [3, 6, 9] {
        if bit(b) {
            p += 8;
        }
    }
    Some((time, p))
}

/// Byte offsets of the TIME and CPU fields of every SAMPLE record of the
/// data section (the attr found by the sample's leading IDENTIFIER).
fn sample_fields(d: &[u8]) -> Vec<(usize, usize)> {
    let hdr = FileHeader::parse("x", d).unwrap();
    let attrs = read_attrs("x", d, &hdr).unwrap();
    assert!(attrs.iter().all(|a| a.attr.sample_type & (1 << 16) != 0));
    let start = hdr.data.offset as usize;
    let end = start + hdr.data.size as usize;
    let mut out = Vec::new();
    let mut at = start;
    while at < end {
        let ty = u32::from_le_bytes(d[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(d[at + 6..at + 8].try_into().unwrap()) as usize;
        if ty == SAMPLE {
            let id = u64_at(d, at + 8);
            let a = attrs.iter().find(|a| a.ids.contains(&id)).unwrap();
            let (time, cpu) = offsets(a.attr.sample_type).unwrap();
            out.push((at + time, at + cpu));
        }
        at += size;
    }
    assert!(out.len() > 100);
    out
}

/// The events of `t` as comparable text (interned strings resolved).
fn events(t: &Trace) -> Vec<String> {
    t.events
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e.ts.0,
                e.cpu.0,
                e.tid.0,
                t.event_name(e.name)
            )
        })
        .collect()
}

/// One sample of the undamaged file, the one the damage hits.
fn without(t: &Trace, ts: u64, cpu: u32) -> Vec<String> {
    let mut v = events(t);
    let i = v
        .iter()
        .position(|e| e.starts_with(&format!("{ts} {cpu} ")))
        .unwrap();
    v.remove(i);
    v
}

#[test]
fn a_sample_on_a_cpu_the_file_does_not_have_is_skipped_with_a_warning() {
    let orig = fixture("sched_small.data");
    let good = schedscope_parser::load_bytes("x", &orig).unwrap();
    assert_eq!(good.meta.nr_cpus_online, Some(2));
    let fields = sample_fields(&orig);
    for &k in &[0, 1, fields.len() / 2, fields.len() - 1] {
        let (time_at, cpu_at) = fields[k];
        let ts = u64_at(&orig, time_at);
        let cpu = u32::from_le_bytes(orig[cpu_at..cpu_at + 4].try_into().unwrap());
        let mut d = orig.clone();
        d[cpu_at..cpu_at + 4].copy_from_slice(&58880u32.to_le_bytes());
        let t = schedscope_parser::load_bytes("x", &d).unwrap();
        assert_eq!(t.nr_cpus, 2, "sample {k}");
        assert_eq!(events(&t), without(&good, ts, cpu), "sample {k}");
        let w: Vec<_> = t
            .warnings
            .iter()
            .filter(|w| w.message.contains("name a CPU that does not exist"))
            .collect();
        assert_eq!(w.len(), 1, "sample {k}: {:?}", t.warnings);
        assert_eq!(w[0].severity, Severity::Error);
        assert!(w[0].message.contains("CPU 58880"), "{}", w[0].message);
        assert!(
            w[0].message.contains("the file records 2 CPUs"),
            "{}",
            w[0].message
        );
    }
}

#[test]
fn a_sample_time_far_from_its_neighbours_is_skipped_with_a_warning() {
    let orig = fixture("sched_small.data");
    let good = schedscope_parser::load_bytes("x", &orig).unwrap();
    let fields = sample_fields(&orig);
    // the first, second and last samples, and one in the middle; times far
    // in the future (as 8 random bytes make them) and near zero
    for &k in &[0, 1, fields.len() / 2, fields.len() - 1] {
        for bad in [576_460_752_303_423_488u64, 0xdead_beef_dead_beef, 17] {
            let (time_at, cpu_at) = fields[k];
            let ts = u64_at(&orig, time_at);
            let cpu = u32::from_le_bytes(orig[cpu_at..cpu_at + 4].try_into().unwrap());
            let mut d = orig.clone();
            d[time_at..time_at + 8].copy_from_slice(&bad.to_le_bytes());
            let t = schedscope_parser::load_bytes("x", &d).unwrap();
            assert_eq!(events(&t), without(&good, ts, cpu), "sample {k} at {bad}");
            assert!(t.end().0 <= good.end().0 && t.start().0 >= good.start().0);
            let w: Vec<_> = t
                .warnings
                .iter()
                .filter(|w| w.message.contains("time implausible"))
                .collect();
            assert_eq!(w.len(), 1, "sample {k} at {bad}: {:?}", t.warnings);
            assert_eq!(w[0].count, 1);
            assert!(w[0].message.contains(&format!("first: {bad} ns")));
        }
    }
}

/// The undamaged fixtures lose nothing to the checks.
#[test]
fn sound_recordings_have_no_implausible_samples() {
    for f in [
        "sched_small.data",
        "sched_small_zstd.data",
        "callchain.data",
    ] {
        let t = schedscope_parser::load_bytes(f, &fixture(f)).unwrap();
        assert!(!t.events.is_empty());
        assert!(
            t.warnings.iter().all(
                |w| !w.message.contains("implausible") && !w.message.contains("does not exist")
            ),
            "{f}: {:?}",
            t.warnings
        );
    }
}
