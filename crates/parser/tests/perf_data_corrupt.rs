//! Damaged perf.data input: the decoder keeps the events before the damage,
//! warns with the byte offset, and fails with a clear error only when
//! nothing is usable. Never panics. The expected numbers come from an
//! independent walk over the record headers of the committed fixture.

use schedscope_parser::{load_bytes, perf_data, ParseError};
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

/// (offset, type, size) of every record of the data section.
fn records(d: &[u8]) -> Vec<(usize, u32, usize)> {
    let start = u64_at(d, 40) as usize;
    let end = start + u64_at(d, 48) as usize;
    let mut out = Vec::new();
    let mut p = start;
    while p < end {
        let ty = u32::from_le_bytes(d[p..p + 4].try_into().unwrap());
        let size = u16::from_le_bytes(d[p + 6..p + 8].try_into().unwrap()) as usize;
        out.push((p, ty, size));
        p += size;
    }
    out
}

const SAMPLE: u32 = 9;

fn samples_before(d: &[u8], off: usize) -> u64 {
    records(d)
        .iter()
        .filter(|r| r.1 == SAMPLE && r.0 < off)
        .count() as u64
}

fn decode(d: &[u8]) -> Trace {
    load_bytes("x.data", d).unwrap_or_else(|e| panic!("{e}"))
}

fn error_warning(t: &Trace) -> &schedscope_trace::Warning {
    t.warnings
        .iter()
        .find(|w| w.severity == Severity::Error)
        .unwrap_or_else(|| panic!("no error warning in {:#?}", t.warnings))
}

#[test]
fn header_errors() {
    let d = fixture("sched_small.data");
    assert!(matches!(
        load_bytes("x.data", &[]),
        Err(ParseError::Empty { .. })
    ));
    match load_bytes("x.data", &d[..50]) {
        Err(e @ ParseError::Truncated { offset: 50, .. }) => {
            assert!(e.to_string().contains("x.data"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let mut bad = d.clone();
    bad[..8].copy_from_slice(b"PERFILE3");
    let e = perf_data::decode("x.data", &bad).unwrap_err();
    assert!(e.to_string().contains("offset 0"), "{e}");
    // attr table past the end of the file
    let mut bad = d.clone();
    bad[24..32].copy_from_slice(&(d.len() as u64 + 8).to_le_bytes());
    assert!(matches!(
        perf_data::decode("x.data", &bad),
        Err(ParseError::Truncated { .. })
    ));
    // absurd attr_size
    let mut bad = d.clone();
    bad[16..24].copy_from_slice(&3u64.to_le_bytes());
    assert!(matches!(
        perf_data::decode("x.data", &bad),
        Err(ParseError::Corrupt { offset: 16, .. })
    ));
}

#[test]
fn truncated_file_is_a_clear_error() {
    // perf writes the tracing data after the records: a file cut in its data
    // section has no formats left, so no tracepoint can be decoded
    let d = fixture("sched_small.data");
    let recs = records(&d);
    let cut = recs[recs.len() / 2].0 + 20; // in the middle of a record
    match load_bytes("x.data", &d[..cut]) {
        Err(e @ ParseError::Corrupt { .. }) => {
            let s = e.to_string();
            assert!(s.contains(&format!("byte offset {cut}")), "{s}");
            assert!(s.contains("truncated"), "{s}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn data_section_cut_short_keeps_events_before_the_cut() {
    // the data section ends early but the feature sections are intact: the
    // header claims more data than there is (the feature table moves along)
    let d = fixture("sched_small.data");
    let full = decode(&d);
    let recs = records(&d);
    let (off, _, _) = recs[recs.len() / 2];
    let data_end = (u64_at(&d, 40) + u64_at(&d, 48)) as usize;
    // drop the second half of the records, keep the feature sections
    let mut bad = d[..off + 20].to_vec();
    let shift = data_end - (off + 20);
    bad.extend_from_slice(&d[data_end..]);
    bad[48..56].copy_from_slice(&((off + 20 - u64_at(&d, 40) as usize) as u64).to_le_bytes());
    // feature sections moved by `shift`
    let nfeat: u32 = (0..4).map(|i| u64_at(&d, 72 + 8 * i).count_ones()).sum();
    for i in 0..nfeat as usize {
        let at = off + 20 + 16 * i;
        let o = u64_at(&bad, at) - shift as u64;
        bad[at..at + 8].copy_from_slice(&o.to_le_bytes());
    }
    let t = decode(&bad);
    assert_eq!(t.events.len() as u64, samples_before(&d, off));
    assert!(t.events.len() < full.events.len() && !t.events.is_empty());
    let w = error_warning(&t);
    assert!(
        w.message.contains(&format!("byte offset {off}")),
        "{}",
        w.message
    );
    let all: std::collections::HashSet<_> = full.events.iter().map(|e| (e.ts, e.cpu)).collect();
    assert!(t.events.iter().all(|e| all.contains(&(e.ts, e.cpu))));
}

#[test]
fn record_size_below_8_stops_there() {
    let d = fixture("sched_small.data");
    let recs = records(&d);
    let (off, _, _) = recs[recs.len() / 3];
    let mut bad = d.clone();
    bad[off + 6..off + 8].copy_from_slice(&4u16.to_le_bytes());
    let t = decode(&bad);
    assert_eq!(t.events.len() as u64, samples_before(&d, off));
    let w = error_warning(&t);
    assert!(
        w.message.contains(&format!("byte offset {off}")),
        "{}",
        w.message
    );
    assert!(w.message.contains("size 4"), "{}", w.message);
    let data_end = u64_at(&d, 40) + u64_at(&d, 48);
    assert_eq!(w.count, data_end - off as u64, "bytes skipped");
}

#[test]
fn record_running_past_the_end() {
    let d = fixture("sched_small.data");
    let recs = records(&d);
    let (off, _, _) = recs[recs.len() - 3];
    let mut bad = d.clone();
    bad[off + 6..off + 8].copy_from_slice(&0xfff0u16.to_le_bytes());
    let t = decode(&bad);
    assert_eq!(t.events.len() as u64, samples_before(&d, off));
    let w = error_warning(&t);
    assert!(
        w.message.contains(&format!("byte offset {off}")),
        "{}",
        w.message
    );
    assert!(w.message.contains("runs past the end"), "{}", w.message);
}

#[test]
fn nothing_usable_is_an_error_with_offset() {
    let d = fixture("sched_small.data");
    let start = u64_at(&d, 40) as usize;
    let mut bad = d.clone();
    bad[start + 6..start + 8].copy_from_slice(&0u16.to_le_bytes());
    match perf_data::decode("x.data", &bad) {
        Err(e @ ParseError::Corrupt { .. }) => {
            let s = e.to_string();
            assert!(s.contains(&format!("byte offset {start}")), "{s}");
            assert!(s.starts_with("x.data: "), "{s}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_record_type_is_skipped_and_counted() {
    let d = fixture("sched_small.data");
    let full = decode(&d);
    let recs = records(&d);
    let rounds: Vec<_> = recs.iter().filter(|r| r.1 == 68).take(2).collect();
    assert_eq!(rounds.len(), 2, "fixture has FINISHED_ROUND records");
    let mut bad = d.clone();
    for r in &rounds {
        bad[r.0..r.0 + 4].copy_from_slice(&200u32.to_le_bytes());
    }
    let t = decode(&bad);
    assert_eq!(t.events, full.events);
    let w = t
        .warnings
        .iter()
        .find(|w| w.message.contains("unknown type"))
        .expect("warning");
    assert_eq!(w.count, 2);
    assert!(
        w.message
            .contains(&format!("type 200 at byte offset {}", rounds[0].0)),
        "{}",
        w.message
    );
}

#[test]
fn sample_with_unknown_id_or_common_type_is_skipped() {
    let d = fixture("sched_small.data");
    let full = decode(&d);
    let recs = records(&d);
    let samples: Vec<_> = recs.iter().filter(|r| r.1 == SAMPLE).collect();
    let (a, b) = (samples[10].0, samples[20].0);
    let mut bad = d.clone();
    // PERF_SAMPLE_IDENTIFIER is the first u64 of the body
    bad[a + 8..a + 16].copy_from_slice(&0xdead_beefu64.to_le_bytes());
    // common_type is the first u16 of the RAW payload: IDENTIFIER, IP, TID,
    // TIME, CPU, PERIOD (6 u64s), then the u32 raw size
    bad[b + 8 + 52..b + 8 + 54].copy_from_slice(&9999u16.to_le_bytes());
    let t = decode(&bad);
    assert_eq!(t.events.len(), full.events.len() - 2);
    let id = t
        .warnings
        .iter()
        .find(|w| w.message.contains("sample id"))
        .expect("id warning");
    assert!(
        id.message
            .contains(&format!("id {} at byte offset {a}", 0xdead_beefu64)),
        "{}",
        id.message
    );
    let ct = t
        .warnings
        .iter()
        .find(|w| w.message.contains("common_type"))
        .expect("type warning");
    assert!(
        ct.message
            .contains(&format!("type 9999 at byte offset {b}")),
        "{}",
        ct.message
    );
}

#[test]
fn corrupt_zstd_stream_does_not_panic() {
    let d = fixture("sched_small_zstd.data");
    let full = decode(&d);
    let recs = records(&d);
    let comp: Vec<_> = recs.iter().filter(|r| r.1 == 81).collect();
    assert!(comp.len() >= 2);
    // damage the second compressed record's payload
    let (off, _, size) = *comp[1];
    let mut bad = d.clone();
    for b in &mut bad[off + 8..off + size] {
        *b ^= 0x5a;
    }
    match load_bytes("x.data", &bad) {
        Ok(t) => {
            assert!(t.events.len() < full.events.len());
            assert!(t.warnings.iter().any(|w| w.severity == Severity::Error));
        }
        Err(e) => assert!(e.to_string().contains("zstd"), "{e}"),
    }
}

#[test]
fn every_prefix_decodes_without_panic() {
    let d = fixture("callchain.data");
    let step = (d.len() / 300).max(1);
    for cut in (0..d.len()).step_by(step) {
        let _ = load_bytes("x.data", &d[..cut]);
    }
}
