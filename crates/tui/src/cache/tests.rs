//! The cache against the lanes a fresh load builds (the oracle is
//! [`Lanes::build`] on the timeline of the decoded fixture), and against
//! stale and damaged files.

use super::*;
use crate::data::Data;
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../../fixtures/{rel}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn fresh(path: &Path) -> Data {
    let trace = schedscope_parser::load(path).expect("fixture loads");
    Data::from_trace(trace, &|_| {})
}

/// A private directory for one test.
fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "schedscope-lane-cache-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn round_trip_gives_the_lanes_a_fresh_load_builds() {
    // a recording with many tasks, a simulated one with CPU groups
    // of two, and the hand-made trace with lost-event repairs
    for rel in [
        "idle/hackbench.data",
        "sim/mixed-s1.data",
        "repairs/hand-made.txt",
    ] {
        let path = fixture(rel);
        let d = fresh(&path);
        let key = Key::of(&path).unwrap();
        let bytes = encode(&key, &d.cache_meta(), &d.lanes);
        let (meta, lanes) = decode(&bytes, &key).expect(rel);
        // the oracle: the lanes built again from the fresh timeline
        assert_eq!(lanes, Lanes::build(&d.timeline), "{rel}");
        assert_eq!(meta.events, d.report.trace.events, "{rel}");
        assert_eq!(meta.threads.len(), d.timeline.threads.len(), "{rel}");
        assert_eq!(meta.groups, d.cpu_groups, "{rel}");
        // the data the timeline draws from: same tasks, codes and labels
        let c = Data::from_cache(meta, lanes);
        assert!(c.from_cache);
        assert_eq!(c.lanes.cpus.len(), d.lanes.cpus.len());
        assert_eq!(
            (c.timeline.start, c.timeline.end),
            (d.timeline.start, d.timeline.end)
        );
        for (tid, t) in &d.tasks {
            let ct = &c.tasks[tid];
            assert_eq!(
                (&ct.comm, ct.tgid, ct.code),
                (&t.comm, t.tgid, t.code),
                "{rel} {tid}"
            );
            assert_eq!(c.label(*tid), d.label(*tid));
        }
    }
}

#[test]
fn round_trip_keeps_every_overlay_the_lanes_draw() {
    // the fixtures above must exercise what the cache holds, or the
    // round trip proves little
    let d = fresh(&fixture("idle/hackbench.data"));
    let l = &d.lanes;
    assert!(l.cpus.iter().all(|c| c.len() > 100));
    assert!(l.wakeups.iter().any(|m| m.count(0, u64::MAX) > 0));
    assert!(l.preemptions.iter().any(|m| m.count(0, u64::MAX) > 0));
    assert!(l.wasted.iter().any(|s| s.covered(0, u64::MAX) > 0));
    assert!(l.any_waiting.covered(0, u64::MAX) > 0);
    assert!(l.cpus.iter().any(|c| c.pressure.steps().0.len() > 10));
    let r = fresh(&fixture("repairs/hand-made.txt"));
    assert!(r.lanes.repaired.iter().any(|s| s.covered(0, u64::MAX) > 0));
    let m = fresh(&fixture("sim/mixed-s1.data"));
    assert!(m
        .timeline
        .threads
        .iter()
        .any(|t| t.tgid.is_some_and(|p| p != t.tid)));
}

#[test]
fn store_then_load_and_a_changed_file_is_a_miss() {
    let dir = tmp("stale");
    let trace = dir.join("t.data");
    std::fs::copy(fixture("sim/bare-metal-s1.data"), &trace).unwrap();
    let d = fresh(&trace);
    let key = Key::of(&trace).unwrap();
    store(&dir, &key, &encode(&key, &d.cache_meta(), &d.lanes)).unwrap();
    let (_, lanes) = load(&dir, &key).expect("a hit");
    assert_eq!(lanes, *d.lanes);
    // the same bytes, another mtime: the key differs, the file is a miss
    let f = std::fs::File::options().write(true).open(&trace).unwrap();
    f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    drop(f);
    let touched = Key::of(&trace).unwrap();
    assert_ne!(touched.mtime, key.mtime);
    assert!(load(&dir, &touched).is_none());
    // one more byte: another size
    let mut bytes = std::fs::read(&trace).unwrap();
    bytes.push(0);
    std::fs::write(&trace, &bytes).unwrap();
    let grown = Key::of(&trace).unwrap();
    assert_eq!(grown.size, key.size + 1);
    assert!(load(&dir, &grown).is_none());
    // rewritten, then the cache of the new content replaces the old one
    let d2 = fresh(&fixture("sim/mixed-s1.data"));
    store(&dir, &grown, &encode(&grown, &d2.cache_meta(), &d2.lanes)).unwrap();
    assert_eq!(load(&dir, &grown).expect("rewritten").1, *d2.lanes);
    assert!(load(&dir, &key).is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn another_head_size_or_path_is_a_miss() {
    let path = fixture("sim/bare-metal-s1.data");
    let d = fresh(&path);
    let key = Key::of(&path).unwrap();
    let bytes = encode(&key, &d.cache_meta(), &d.lanes);
    assert!(decode(&bytes, &key).is_some());
    for other in [
        Key {
            head: key.head ^ 1,
            ..key.clone()
        },
        Key {
            size: key.size - 1,
            ..key.clone()
        },
        Key {
            mtime: (key.mtime.0, key.mtime.1 ^ 1),
            ..key.clone()
        },
        Key {
            path: format!("{}x", key.path),
            ..key.clone()
        },
    ] {
        assert!(decode(&bytes, &other).is_none(), "{other:?}");
    }
}

/// The file with its checksum made right again after `body` changed, so
/// that the decoder's own bounds checks are what is tested.
fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&bytes[16..]);
    bytes[12..16].copy_from_slice(&crc.to_le_bytes());
    bytes
}

#[test]
fn truncated_or_flipped_files_are_ignored_never_a_panic() {
    let path = fixture("sim/bare-metal-s1.data");
    let d = fresh(&path);
    let key = Key::of(&path).unwrap();
    let bytes = encode(&key, &d.cache_meta(), &d.lanes);
    assert!(bytes.len() > 1000);
    for n in 0..bytes.len() {
        assert!(decode(&bytes[..n], &key).is_none(), "cut at {n}");
        // even with a checksum that matches, a cut body never decodes
        if n >= 16 {
            assert!(
                decode(&resealed(bytes[..n].to_vec()), &key).is_none(),
                "cut at {n}"
            );
        }
    }
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            assert!(decode(&b, &key).is_none(), "bit {bit:#x} of byte {i}");
            // resealed: anything but a panic (a flipped value may decode)
            let _ = decode(&resealed(b), &key);
        }
    }
    // an appended byte, and a file of another format version
    let mut b = bytes.clone();
    b.push(0);
    assert!(decode(&b, &key).is_none());
    assert!(decode(&resealed(b), &key).is_none());
    let mut b = bytes.clone();
    b[8] = b[8].wrapping_add(1);
    assert!(decode(&b, &key).is_none());
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    let mut w = Writer::default();
    w.u(u64::MAX);
    assert_eq!(Reader::new(&w.0).count(1), None);
    let mut w = Writer::default();
    w.u(3);
    w.0.extend_from_slice(&[0, 0]);
    assert_eq!(Reader::new(&w.0).count(1), None);
    assert_eq!(Reader::new(&[3, 0, 0, 0]).count(1), Some(3));
    // an 11-byte varint and one past 64 bits
    assert_eq!(Reader::new(&[0xff; 11]).u(), None);
    let mut over = vec![0xff; 9];
    over.push(0x02);
    assert_eq!(Reader::new(&over).u(), None);
    let mut max = vec![0xff; 9];
    max.push(0x01);
    assert_eq!(Reader::new(&max).u(), Some(u64::MAX));
}

#[test]
fn varints_round_trip() {
    let mut w = Writer::default();
    let us = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
    let is = [0, -1, 1, i64::MIN, i64::MAX, -300];
    for &u in &us {
        w.u(u);
    }
    for &i in &is {
        w.i(i);
    }
    w.str("sched-messaging");
    let mut r = Reader::new(&w.0);
    for &u in &us {
        assert_eq!(r.u(), Some(u));
    }
    for &i in &is {
        assert_eq!(r.i(), Some(i));
    }
    assert_eq!(r.str().as_deref(), Some("sched-messaging"));
    assert!(r.at_end());
}

#[test]
fn the_directory_follows_xdg_cache_home() {
    // read only: the test does not set variables other tests may read
    let d = default_dir();
    match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
        Some(x) if x.is_absolute() => assert_eq!(d, Some(x.join("schedscope/tui"))),
        _ => {
            if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
                assert_eq!(d, Some(PathBuf::from(h).join(".cache/schedscope/tui")));
            }
        }
    }
    let key = Key {
        path: "/a/b.data".into(),
        size: 1,
        mtime: (2, 3),
        head: 4,
    };
    let f = file_in(Path::new("/c"), &key);
    assert_eq!(f.parent(), Some(Path::new("/c")));
    assert!(f.to_str().unwrap().ends_with(".lanes"));
    assert_ne!(
        f,
        file_in(
            Path::new("/c"),
            &Key {
                path: "/a/c.data".into(),
                ..key
            }
        )
    );
}

#[test]
fn prune_keeps_the_newest_caches_and_leaves_other_files() {
    let dir = tmp("prune");
    let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + s);
    let touch = |name: &str, t| {
        let p = dir.join(name);
        std::fs::write(&p, b"x").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    };
    for i in 0..5u64 {
        touch(&format!("{i:016x}.lanes"), at(i));
    }
    touch("a.tmp123", at(0));
    touch("notes.txt", at(0));
    // a temporary file being written now is kept
    std::fs::write(dir.join("b.tmp456"), b"x").unwrap();
    prune(&dir, 3);
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "0000000000000002.lanes",
            "0000000000000003.lanes",
            "0000000000000004.lanes",
            "b.tmp456",
            "notes.txt"
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Where a cache read spends its time (`SCHEDSCOPE_LANE_CACHE=FILE.lanes
/// cargo test --release -p schedscope-tui --lib read_phases -- --ignored
/// --nocapture`).
#[test]
#[ignore]
fn read_phases() {
    let Some(f) = std::env::var_os("SCHEDSCOPE_LANE_CACHE") else {
        return;
    };
    let t = std::time::Instant::now();
    let bytes = std::fs::read(f).unwrap();
    eprintln!("read {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let crc = crc32fast::hash(&bytes[16..]);
    eprintln!("crc {:?} {crc}", t.elapsed());
    let t = std::time::Instant::now();
    let mut r = Reader::new(&bytes[16..]);
    r.str().unwrap();
    Key::read(&mut r).unwrap();
    let (_, lanes) = codec::decode(&mut r).unwrap();
    eprintln!(
        "decode {:?} {} runs",
        t.elapsed(),
        lanes.cpus.iter().map(|c| c.len()).sum::<usize>()
    );
    let t = std::time::Instant::now();
    let runs: Vec<Vec<(u64, u64, Tid)>> = lanes.cpus.iter().map(|c| c.runs().collect()).collect();
    let keys: Vec<Vec<Tid>> = lanes.cpus.iter().map(|c| c.keys().to_vec()).collect();
    eprintln!("copy {:?}", t.elapsed());
    let t = std::time::Instant::now();
    for (c, (r, k)) in runs.iter().zip(keys).enumerate() {
        std::hint::black_box(crate::index::CpuLane::from_runs(
            c as u32,
            r,
            k,
            Default::default(),
        ));
    }
    eprintln!("from_runs {:?}", t.elapsed());
}
