//! Pipe-mode (`perf record -o -`) and unfinished perf.data, checked against
//! perf itself: recordings made here with `perf record -o -` (plain and
//! `-z`) and two third-party files from `../shared/real-traces/`
//! (a perf 4.14 pipe recording, and a recording killed before perf wrote
//! its header). Recording needs root, perf and tracefs (skipped with a
//! message otherwise); a missing real-trace file fails the test, saying
//! which and where it was looked for.

use schedscope_trace::{EventData, PrevState, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `NAME` in the shared real-trace corpus (`$SCHEDSCOPE_REAL_TRACES`, or
/// `shared/real-traces` beside the repository:
/// [`schedscope_testkit::real_traces_dir`]).
fn real_trace(name: &str) -> PathBuf {
    schedscope_testkit::real_trace(name)
}

fn perf_usable() -> bool {
    schedscope_testkit::perf_works()
}

/// perf script's lines for `path`: (tid, time as "sec.usec", event name).
fn perf_script_events(path: &Path) -> Vec<(i32, String, String)> {
    let o = Command::new("perf")
        .args(["script", "-F", "tid,time,event", "-i"])
        .arg(path)
        .output()
        .expect("run perf script");
    assert!(
        o.status.success(),
        "perf script -i {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let tid = w.next()?.parse().ok()?;
            let time = w.next()?.trim_end_matches(':').to_string();
            let event = w.next()?.trim_end_matches(':').to_string();
            Some((tid, time, event))
        })
        .collect()
}

/// The trace's events as perf script prints them (see above).
fn our_events(t: &Trace) -> Vec<(i32, String, String)> {
    t.events
        .iter()
        .map(|e| {
            (
                e.tid.0,
                format!(
                    "{}.{:06}",
                    e.ts.0 / 1_000_000_000,
                    e.ts.0 % 1_000_000_000 / 1000
                ),
                t.event_name(e.name).to_string(),
            )
        })
        .collect()
}

fn by_name(ev: &[(i32, String, String)]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (_, _, n) in ev {
        *m.entry(n.clone()).or_insert(0) += 1;
    }
    m
}

/// The perf 4.14 pipe recording (`--switch-events --namespaces -e cycles
/// -o -`): the same samples as perf script (tid, time, name: perf names the
/// unnamed hardware event `cycles`), the header's metadata, no warnings.
#[test]
fn quipper_pipe_recording_from_perf_4_14_matches_perf_script() {
    let path = real_trace("quipper_piped_ctx_switch_namespaces-4.14.perf.data");
    let t = schedscope_parser::load(&path).expect("decodes");
    assert_eq!(t.warnings, vec![], "no warnings on a sound pipe file");
    assert_eq!(t.meta.os_release.as_deref(), Some("4.14.27"));
    assert_eq!(t.meta.nr_cpus_online, Some(4));
    let got = our_events(&t);
    assert_eq!(got.len(), 7, "the file has 7 cycles samples");
    assert_eq!(by_name(&got), BTreeMap::from([("cycles".to_string(), 7)]));
    if !perf_usable() {
        eprintln!("skipping the perf script comparison: perf does not work here");
        return;
    }
    assert_eq!(got, perf_script_events(&path));
}

/// A copy of the unfinished file that perf reads: the data size set to the
/// rest of the file and the (never written) feature bits cleared.
fn repaired_copy(path: &Path) -> PathBuf {
    let mut d = std::fs::read(path).unwrap();
    let off = u64::from_le_bytes(d[40..48].try_into().unwrap());
    let rest = d.len() as u64 - off;
    d[48..56].copy_from_slice(&rest.to_le_bytes());
    d[72..104].fill(0);
    let out = std::env::temp_dir().join(format!("schedscope-{}-repaired.data", std::process::id()));
    std::fs::write(&out, d).unwrap();
    out
}

/// The recording whose header perf never wrote (data size 0): its records
/// are recovered to the end of the file with ONE warning that says so and
/// how many bytes (the file size less the data offset in its header); it
/// holds no samples, as perf script says of a copy with the size repaired,
/// and its one COMM record names the task.
#[test]
fn unfinished_recording_is_recovered_with_one_warning() {
    let path = real_trace("spinner_unterminated.perf.data");
    let bytes = std::fs::read(&path).unwrap();
    let off = u64::from_le_bytes(bytes[40..48].try_into().unwrap());
    let size = u64::from_le_bytes(bytes[48..56].try_into().unwrap());
    assert_eq!(size, 0, "the file's header says data size 0");
    let t = schedscope_parser::load(&path).expect("decodes");
    assert_eq!(t.warnings.len(), 1, "one warning: {:?}", t.warnings);
    let w = &t.warnings[0].message;
    assert!(w.contains("recording was not finished"), "{w}");
    let recovered = bytes.len() as u64 - off;
    assert!(
        w.contains(&format!("recovered {recovered} bytes of records from byte offset {off} up to the end of the file")),
        "{w}"
    );
    assert_eq!(t.events.len(), 0);
    assert_eq!(t.event_count(), 0);
    if !perf_usable() {
        eprintln!("skipping the perf script comparison: perf does not work here");
        return;
    }
    let fixed = repaired_copy(&path);
    let want = perf_script_events(&fixed);
    assert_eq!(our_events(&t), want);
    // the COMM record, as perf script --show-task-events prints it
    let o = Command::new("perf")
        .args(["script", "--show-task-events", "-i"])
        .arg(&fixed)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let comm_line = text
        .lines()
        .find(|l| l.contains("PERF_RECORD_COMM"))
        .expect("perf shows the COMM record");
    // "   spinner 1234 ... PERF_RECORD_COMM: spinner:1234/1234"
    let (comm, ids) = comm_line
        .rsplit_once("PERF_RECORD_COMM")
        .and_then(|(_, r)| r.trim_start_matches(':').trim().split_once(':'))
        .unwrap();
    let tid: i32 = ids.split('/').nth(1).unwrap().trim().parse().unwrap();
    assert_eq!(t.tasks.comm(schedscope_trace::Tid(tid)), comm);
    let _ = std::fs::remove_file(fixed);
}

fn can_record() -> Option<String> {
    if schedscope_testkit::id_u_is_root() != Some(true) {
        return Some("not root".into());
    }
    if !perf_usable() {
        return Some("perf does not work here".into());
    }
    if !Path::new("/sys/kernel/tracing/events/sched").exists() {
        return Some("tracefs is not mounted at /sys/kernel/tracing".into());
    }
    None
}

/// `perf record -o - [extra] -a -e sched:sched_switch,sched:sched_wakeup`
/// of a short `perf bench`, its standard output written to a file.
fn record_pipe(extra: &[&str], tag: &str) -> PathBuf {
    let out =
        std::env::temp_dir().join(format!("schedscope-{}-{tag}.pipe.data", std::process::id()));
    let f = std::fs::File::create(&out).unwrap();
    let st = Command::new("perf")
        .args(["record", "-q", "-o", "-", "-a"])
        .args(extra)
        .args(["-e", "sched:sched_switch,sched:sched_wakeup", "--"])
        .args(["perf", "bench", "sched", "messaging", "-g", "1", "-l", "20"])
        .stdout(f)
        .stderr(Stdio::null())
        .status()
        .expect("run perf record");
    assert!(st.success(), "perf record -o - failed: {st}");
    out
}

/// Pipe recordings made here (plain and zstd): every event as perf script
/// prints it (tid, time, name, in time order), and every sched_switch's
/// fields; per task, the number of switches out.
#[test]
fn pipe_recordings_match_perf_script() {
    if let Some(why) = can_record() {
        eprintln!("skipping: {why}");
        return;
    }
    for (extra, tag) in [(&[][..], "plain"), (&["-z"][..], "zstd")] {
        let path = record_pipe(extra, tag);
        let t = schedscope_parser::load(&path).expect("decodes");
        assert!(
            t.count("sched:sched_switch") > 50,
            "{tag}: too few switches to test"
        );
        let got = our_events(&t);
        let want = perf_script_events(&path);
        // (events with equal times may be listed in another order)
        let sorted = |mut v: Vec<(i32, String, String)>| {
            v.sort_by(|a, b| (&a.1, a.0, &a.2).cmp(&(&b.1, b.0, &b.2)));
            v
        };
        assert_eq!(sorted(got), sorted(want), "{tag}");
        // sched_switch fields, against perf script's text
        let o = Command::new("perf")
            .args(["script", "--ns", "-F", "time,event,trace", "-i"])
            .arg(&path)
            .output()
            .unwrap();
        let mut want_sw: Vec<(String, i32, String, i32)> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                let (time, rest) = l.trim().split_once(':')?;
                let rest = rest.trim_start().strip_prefix("sched:sched_switch:")?;
                let field = |k: &str| {
                    rest.split_whitespace()
                        .find_map(|w| w.strip_prefix(k))
                        .map(str::to_string)
                };
                Some((
                    time.to_string(),
                    field("prev_pid=")?.parse().ok()?,
                    format!("{:?}", PrevState::parse_text(&field("prev_state=")?)?),
                    field("next_pid=")?.parse().ok()?,
                ))
            })
            .collect();
        let mut got_sw: Vec<(String, i32, String, i32)> = t
            .events
            .iter()
            .filter_map(|e| match e.data {
                EventData::Switch {
                    prev_tid,
                    prev_state,
                    next_tid,
                    ..
                } => Some((
                    format!("{}.{:09}", e.ts.0 / 1_000_000_000, e.ts.0 % 1_000_000_000),
                    prev_tid.0,
                    format!("{prev_state:?}"),
                    next_tid.0,
                )),
                _ => None,
            })
            .collect();
        want_sw.sort();
        got_sw.sort();
        assert_eq!(got_sw.len(), want_sw.len(), "{tag}");
        assert_eq!(got_sw, want_sw, "{tag}");
        let mut per_task: BTreeMap<i32, u64> = BTreeMap::new();
        for (_, prev, _, _) in &want_sw {
            *per_task.entry(*prev).or_default() += 1;
        }
        let mut ours: BTreeMap<i32, u64> = BTreeMap::new();
        for (_, prev, _, _) in &got_sw {
            *ours.entry(*prev).or_default() += 1;
        }
        assert_eq!(ours, per_task, "{tag}: switches per task");
        let _ = std::fs::remove_file(path);
    }
}
