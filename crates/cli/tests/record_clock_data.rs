//! `schedscope record` writes HEADER_CLOCK_DATA (the wall-clock anchor) as
//! `perf record -k CLOCK_MONOTONIC` does: perf's `script -F tod` turns our
//! file's sample times into times of day that fall inside the wall-clock
//! window of the recording, and our decoder's anchor gives the same time of
//! day as perf for every sample. Needs root and perf.

#[path = "record_common/mod.rs"]
mod common;

use common::*;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// "2026-12-01 20:41:39.822984279" (UTC) as ns since the epoch.
fn parse_tod(s: &str) -> Option<i64> {
    let (date, time) = s.split_once(' ')?;
    let mut d = date.split('-').map(|v| v.parse::<i64>());
    let (y, mo, da) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let (hms, frac) = time.split_once('.')?;
    let mut t = hms.split(':').map(|v| v.parse::<i64>());
    let (h, mi, se) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    if frac.len() != 9 {
        return None;
    }
    let secs = days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + se;
    Some(secs * 1_000_000_000 + frac.parse::<i64>().ok()?)
}

/// "21126.832066092" as ns.
fn parse_ts(s: &str) -> Option<u64> {
    let (sec, ns) = s.trim_end_matches(':').split_once('.')?;
    Some(sec.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

#[test]
fn days_from_civil_matches_known_dates() {
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    assert_eq!(
        parse_tod("2026-12-01 00:00:01.000000002"),
        Some(1_796_083_201_000_000_002)
    );
}

#[test]
fn recorded_clock_data_gives_perfs_time_of_day() {
    require_root_and_perf!();
    let dir = tmpdir("clock_data");
    let before = now_ns();
    let out = record(
        &dir,
        "c.data",
        &["-e", "sched:sched_switch", "--duration", "0.3"],
        &[],
    );
    let after = now_ns();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join("c.data");
    let script = Command::new("perf")
        .env("TZ", "UTC")
        .args(["script", "--ns", "-F", "time,tod", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&script.stdout);
    assert!(
        script.status.success(),
        "perf script -F tod: {}",
        String::from_utf8_lossy(&script.stderr)
    );
    let t = schedscope_parser::load(&file).unwrap();
    let w = t.meta.wall_clock.expect("HEADER_CLOCK_DATA decoded");
    assert_eq!(w.clockid, 1, "CLOCK_MONOTONIC, the events' clock");
    let mut n = 0;
    for line in text.lines() {
        // "2026-12-01 20:41:39.822984279 21126.832066092: "
        let f: Vec<&str> = line.split_whitespace().collect();
        let [date, time, ts] = f[..] else {
            panic!("unexpected perf script line {line:?}");
        };
        let tod = parse_tod(&format!("{date} {time}")).expect(line);
        let ts = parse_ts(ts).expect(line);
        assert!(
            (before..=after).contains(&tod),
            "perf puts the sample at {tod} ns, outside the recording's wall-clock window \
             {before}..{after}: {line}"
        );
        assert_eq!(w.tod_of(ts), Some(tod), "our anchor vs perf's: {line}");
        n += 1;
    }
    assert!(n >= 10, "only {n} samples:\n{text}");
}
