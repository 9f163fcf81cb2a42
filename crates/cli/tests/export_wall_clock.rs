//! `trace.wall_clock_ns` and the `date=` partition: from perf.data's
//! HEADER_CLOCK_DATA (`perf record -k mono`), checked against what
//! `perf report --header-only` prints as its reference time; null (and
//! the file's modification day) without it.

#[path = "record_common/mod.rs"]
mod common;
mod export_common;

use export_common::*;
use std::path::Path;
use std::process::Command;

/// The `trace` table of a CSV export of `file`: (header, row), and the
/// `date=` partition it went to.
fn trace_row(file: &Path, tag: &str) -> (Vec<String>, Vec<String>, String) {
    let out = fresh_dir(tag);
    schedscope(&[
        "export",
        file.to_str().unwrap(),
        "--csv",
        out.to_str().unwrap(),
    ]);
    let host_dir = std::fs::read_dir(out.join("trace"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let date_dir = std::fs::read_dir(&host_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let date = date_dir
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .strip_prefix("date=")
        .unwrap()
        .to_string();
    let run_dir = std::fs::read_dir(&date_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(run_dir.join("part-00000.csv")).unwrap();
    let mut lines = text.lines();
    let split = csv_fields;
    let header = split(lines.next().unwrap());
    let row = split(lines.next().unwrap());
    let _ = std::fs::remove_dir_all(&out);
    (header, row, date)
}

/// The fields of one RFC 4180 CSV line (quoted fields, `""` escapes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match (ch, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            (c, _) => out.last_mut().unwrap().push(c),
        }
    }
    out
}

fn col<'a>(h: &[String], r: &'a [String], name: &str) -> &'a str {
    let i = h.iter().position(|c| c == name).unwrap();
    &r[i]
}

#[test]
fn wall_clock_comes_from_perf_clock_data() {
    require_root_and_perf!();
    let dir = common::tmpdir("wallclock");
    let file = dir.join("k.data");
    let st = Command::new("perf")
        .args([
            "record",
            "-q",
            "-k",
            "mono",
            "-e",
            "sched:sched_switch",
            "-a",
            "-o",
        ])
        .arg(&file)
        .args(["--", "sleep", "0.2"])
        .status()
        .unwrap();
    assert!(st.success());
    // perf's oracle: "# reference time: 2026-12-01 18:46:23.899905 =
    // 1796150783.899905 (TOD) = 14210.908988994 (monotonic)".
    let hdr = Command::new("perf")
        .args(["report", "--header-only", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let hdr = String::from_utf8_lossy(&hdr.stdout);
    let line = hdr
        .lines()
        .find(|l| l.starts_with("# reference time:"))
        .unwrap_or_else(|| panic!("perf wrote no clock data: {hdr}"));
    let parts: Vec<&str> = line.split('=').map(str::trim).collect();
    let day = parts[0]
        .trim_start_matches("# reference time:")
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let secs_ns = |s: &str| -> i128 {
        let (s, frac) = s.split_once('.').unwrap();
        let frac = format!("{frac:0<9}");
        s.parse::<i128>().unwrap() * 1_000_000_000 + frac[..9].parse::<i128>().unwrap()
    };
    let tod = secs_ns(parts[1].split_whitespace().next().unwrap());
    let mono = secs_ns(parts[2].split_whitespace().next().unwrap());
    let (first, _) = common::sample_time_range(&file);
    let (h, r, date) = trace_row(&file, "wallclock-k");
    let got: i128 = col(&h, &r, "wall_clock_ns").parse().unwrap();
    let want = tod + i128::from(first) - mono;
    assert_eq!(col(&h, &r, "ts_start"), first.to_string());
    // perf prints the time of day in microseconds.
    assert!(
        (got - want).abs() < 1_000,
        "wall_clock_ns {got}, perf {want}"
    );
    // The reference time is taken at the start of the recording: its day is
    // the first event's (a test run across midnight UTC could differ).
    assert_eq!(date, day, "date= from the wall clock");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_clock_data_wall_clock_is_null_and_date_is_the_mtime() {
    for f in ["perf/sched_small.data", "sim/mixed-s1.txt"] {
        let p = fixture(f);
        let (h, r, date) = trace_row(&p, "wallclock-none");
        assert_eq!(col(&h, &r, "wall_clock_ns"), "", "{f}");
        let mtime = std::fs::metadata(&p)
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // The day, as `date -u -d @SECS +%F` gives it.
        let want = Command::new("date")
            .args(["-u", "-d", &format!("@{mtime}"), "+%F"])
            .output()
            .unwrap();
        assert_eq!(date, String::from_utf8_lossy(&want.stdout).trim(), "{f}");
    }
}
