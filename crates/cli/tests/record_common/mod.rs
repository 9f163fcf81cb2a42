//! Helpers shared by the `record*` integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_schedscope");

pub fn can_record() -> Result<(), String> {
    if !schedscope_testkit::effective_uid_is_root() {
        return Err("not running as root".into());
    }
    if schedscope_testkit::perf_works() {
        Ok(())
    } else {
        Err("perf is not installed".into())
    }
}

/// Return early (skip) with a message unless root and perf are available.
#[macro_export]
macro_rules! require_root_and_perf {
    () => {
        if let Err(why) = $crate::common::can_record() {
            eprintln!("SKIPPED: {} (needs root and perf)", why);
            return;
        }
    };
}

pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedscope-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Lines perf prints for every file with these events, ours or its own:
/// Debian's libtraceevent has no plugins dir and no __get_cpumask.
pub fn is_known_perf_noise(line: &str) -> bool {
    line.trim().is_empty()
        || line.contains("libtraceevent: No such file or directory")
        || line.contains("function __get_cpumask not defined")
}

/// `perf script` per-event sample counts; asserts exit 0 and no warnings
/// unless `allow_lost`, which tolerates perf's lost-chunks warning.
pub fn perf_script_counts(file: &Path, allow_lost: bool) -> BTreeMap<String, u64> {
    let out = Command::new("perf")
        .args(["script", "-F", "event", "-i"])
        .arg(file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "perf script failed: {stderr}");
    let mut lines = stderr
        .lines()
        .filter(|l| !is_known_perf_noise(l))
        .peekable();
    if allow_lost {
        let rest: Vec<&str> = lines.collect();
        for l in &rest {
            assert!(
                l.contains("Warning:") || l.contains("lost") || l.contains("Check IO/CPU overload"),
                "unexpected perf script message: {l}\n{stderr}"
            );
        }
    } else {
        assert!(lines.peek().is_none(), "perf script complained:\n{stderr}");
    }
    let mut counts = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let name = l.trim().trim_end_matches(':');
        if !name.is_empty() {
            *counts.entry(name.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

pub fn rd_u64(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().unwrap())
}

/// Independent oracle for "the records we wrote": walk the data section of
/// the file and count PERF_RECORD_SAMPLEs per attr (by PERF_SAMPLE_IDENTIFIER),
/// naming each attr from this machine's tracefs ids. Also counts
/// PERF_RECORD_LOST records.
pub fn walk_file(file: &Path) -> (BTreeMap<String, u64>, u64) {
    let b = std::fs::read(file).unwrap();
    assert_eq!(&b[0..8], b"PERFILE2");
    let attr_size = rd_u64(&b, 16) as usize;
    let (aoff, asz) = (rd_u64(&b, 24) as usize, rd_u64(&b, 32) as usize);
    let (doff, dsz) = (rd_u64(&b, 40) as usize, rd_u64(&b, 48) as usize);
    assert!(doff + dsz <= b.len(), "data section inside the file");
    let mut tp_names = BTreeMap::new();
    for sys in std::fs::read_dir("/sys/kernel/tracing/events")
        .unwrap()
        .flatten()
    {
        if let Ok(evs) = std::fs::read_dir(sys.path()) {
            for ev in evs.flatten() {
                if let Ok(id) = std::fs::read_to_string(ev.path().join("id")) {
                    tp_names.insert(
                        id.trim().parse::<u64>().unwrap(),
                        format!(
                            "{}:{}",
                            sys.file_name().to_string_lossy(),
                            ev.file_name().to_string_lossy()
                        ),
                    );
                }
            }
        }
    }
    let mut id_name = BTreeMap::new();
    for i in 0..asz / attr_size {
        let a = aoff + i * attr_size;
        let kind = u32::from_ne_bytes(b[a..a + 4].try_into().unwrap());
        let config = rd_u64(&b, a + 8);
        let name = if kind == 2 {
            tp_names[&config].clone()
        } else {
            format!("type{kind}:{config}")
        };
        let (ioff, isz) = (
            rd_u64(&b, a + attr_size - 16),
            rd_u64(&b, a + attr_size - 8),
        );
        for k in 0..isz as usize / 8 {
            id_name.insert(rd_u64(&b, ioff as usize + 8 * k), name.clone());
        }
    }
    let mut counts = BTreeMap::new();
    let mut lost_records = 0;
    let mut p = doff;
    while p < doff + dsz {
        let ty = u32::from_ne_bytes(b[p..p + 4].try_into().unwrap());
        let size = u16::from_ne_bytes([b[p + 6], b[p + 7]]) as usize;
        assert!(size >= 8 && p + size <= doff + dsz, "record at {p} fits");
        if ty == 9 {
            let name = id_name
                .get(&rd_u64(&b, p + 8))
                .expect("sample id belongs to an attr");
            *counts.entry(name.clone()).or_insert(0) += 1;
        } else if ty == 2 {
            lost_records += 1;
        }
        p += size;
    }
    (counts, lost_records)
}

/// "N events, M lost (x%), S MB, T s" from record's stderr.
pub fn summary_numbers(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" events, ") && l.contains(" lost ("))
        .unwrap_or_else(|| panic!("no summary line in:\n{stderr}"));
    let line = line.trim_start_matches("schedscope: ");
    let mut it = line.split_whitespace();
    let n = it.next().unwrap().parse().unwrap();
    let m = it.nth(1).unwrap().parse().unwrap();
    (n, m)
}

pub fn record(dir: &Path, file: &str, extra: &[&str], command: &[&str]) -> Output {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .arg("record")
        .arg("-o")
        .arg(file)
        .args(extra);
    if !command.is_empty() {
        c.arg("--").args(command);
    }
    c.stdin(Stdio::null()).output().unwrap()
}

/// The bytes of feature section `bit` of a perf.data file.
pub fn feature_section(file: &Path, bit: usize) -> Option<Vec<u8>> {
    let b = std::fs::read(file).ok()?;
    let (doff, dsz) = (rd_u64(&b, 40) as usize, rd_u64(&b, 48) as usize);
    let words: Vec<u64> = (0..4).map(|i| rd_u64(&b, 72 + 8 * i)).collect();
    let set = |i: usize| words[i / 64] >> (i % 64) & 1 == 1;
    if !set(bit) {
        return None;
    }
    let k = (0..bit).filter(|&i| set(i)).count();
    let t = doff + dsz + 16 * k;
    let (off, size) = (rd_u64(&b, t) as usize, rd_u64(&b, t + 8) as usize);
    Some(b[off..off + size].to_vec())
}

/// Sample times (ns) of the first and last sample in the file.
pub fn sample_time_range(file: &Path) -> (u64, u64) {
    let out = Command::new("perf")
        .args(["script", "-F", "time", "--ns", "-i"])
        .arg(file)
        .output()
        .unwrap();
    let ts: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (s, ns) = l.trim().trim_end_matches(':').split_once('.')?;
            Some(s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
        })
        .collect();
    (*ts.iter().min().unwrap(), *ts.iter().max().unwrap())
}
