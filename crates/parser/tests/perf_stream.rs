//! The streaming reader against the loader (the oracle): on every
//! perf.data fixture and on generated files of many rounds, the events
//! streamed are `load_with`'s `trace.events` (same order, same fields) and
//! the trace it returns is the loaded one without its events; the files it
//! cannot stream say so.

use schedscope_parser::perf_data::stream::stream_with as stream_bytes;
use schedscope_parser::{load_bytes_with, EventSink, LoadOptions, StreamError};
use schedscope_perf_data::{AttrSpec, EventAttr, Features, PerfDataWriter, TracingData};
use schedscope_trace::{Event, Trace};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

/// Collects what the stream delivers.
#[derive(Default)]
struct Collect {
    started: usize,
    events: Vec<Event>,
    batches: usize,
}

impl EventSink for Collect {
    fn start(&mut self, meta: &Trace) {
        assert!(meta.events.is_empty());
        self.started += 1;
    }
    fn events(&mut self, events: &[Event]) {
        assert_eq!(self.started, 1, "start comes first, once");
        assert!(!events.is_empty());
        self.events.extend_from_slice(events);
        self.batches += 1;
    }
}

/// Every field of the trace but its events (and the hash maps that index
/// its string and task lists, whose order is random; the lists are there).
fn meta(t: &Trace) -> String {
    let mut s = format!("{t:?}");
    // (the events are printed first-level as `events: [...]`)
    let a = s.find("events: [").expect("events field");
    let b = s[a..].find("], event_names").expect("next field") + a;
    s.replace_range(a..b + 1, "events: []");
    for key in [", map: {", ", by_tid: {"] {
        while let Some(a) = s.find(key) {
            let mut depth = 0;
            let mut end = a;
            for (i, ch) in s[a..].char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = a + i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            s.replace_range(a..end, "");
        }
    }
    s
}

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if std::fs::read(&p).unwrap().starts_with(b"PERFILE2") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether the file's header sets the HEADER_COMPRESSED feature bit (27):
/// a `perf record -z` recording.
fn compressed(data: &[u8]) -> bool {
    // the feature bitmap follows the 72 bytes of magic, sizes and sections
    data[72 + 27 / 8] & (1 << (27 % 8)) != 0
}

/// The option sets the report and the tests use: all events, the latency
/// section's, and a filtered load with a tally.
fn option_sets() -> Vec<LoadOptions> {
    let names = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect());
    vec![
        LoadOptions::default(),
        LoadOptions {
            raw_fields: true,
            ..LoadOptions::default()
        },
        LoadOptions {
            keep: names(&[
                "sched:sched_switch",
                "sched:sched_wakeup",
                "sched:sched_wakeup_new",
                "sched:sched_waking",
            ]),
            ..LoadOptions::default()
        },
        LoadOptions {
            keep: names(&["sched:sched_switch", "ipi:*"]),
            tally: vec!["tlb:tlb_flush".into()],
            ..LoadOptions::default()
        },
    ]
}

/// Stream and load `data` with `opts`; compare. Returns the number of
/// batches, or the stream's refusal.
fn same_as_load(name: &str, data: &[u8], opts: &LoadOptions) -> Result<usize, StreamError> {
    let mut c = Collect::default();
    let streamed = stream_bytes(name, data, opts, &|_| {}, &mut c);
    let loaded = load_bytes_with(name, data, opts);
    let streamed = match (streamed, loaded) {
        (Ok(s), Ok(l)) => {
            assert_eq!(c.events.len(), l.events.len(), "{name} {opts:?}");
            assert!(c.events == l.events, "{name} {opts:?}: events differ");
            assert_eq!(meta(&s), meta(&l), "{name} {opts:?}");
            s
        }
        (Err(StreamError::Parse(a)), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{name}");
            return Ok(0);
        }
        (Err(e @ StreamError::Unstreamable { .. }), Ok(_)) => return Err(e),
        (s, l) => panic!(
            "{name}: stream {:?} but load {:?}",
            s.map(|_| ()),
            l.map(|_| ())
        ),
    };
    assert_eq!(c.started, 1);
    assert!(streamed.events.is_empty());
    Ok(c.batches)
}

#[test]
fn streamed_fixtures_equal_the_loaded_ones() {
    let files = fixtures();
    assert!(files.len() >= 8, "{files:?}");
    let mut streamed = 0;
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let name = f.display().to_string();
        for opts in option_sets() {
            match same_as_load(&name, &data, &opts) {
                Ok(_) => streamed += 1,
                // perf record -z: the decompressed events come after the
                // file's in the loader's order
                Err(StreamError::Unstreamable { why, .. }) => {
                    assert!(compressed(&data), "{name}: {why}");
                    assert!(why.contains("compressed"), "{why}");
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    let plain = files
        .iter()
        .filter(|f| !compressed(&std::fs::read(f).unwrap()))
        .count();
    assert!(plain >= 6, "{plain}");
    assert_eq!(streamed, 4 * plain);
    // the path API streams the same
    let f = files
        .iter()
        .find(|f| f.ends_with("sched_small.data"))
        .unwrap();
    let mut c = Collect::default();
    let opts = LoadOptions::default();
    let t = schedscope_parser::stream_with(f, &opts, &AtomicU64::new(0), &mut c).unwrap();
    let l = load_bytes_with(&f.display().to_string(), &std::fs::read(f).unwrap(), &opts).unwrap();
    assert!(c.events == l.events);
    assert_eq!(meta(&t), meta(&l));
}

// This kernel's formats, copied from tracefs (see fixtures/README.md).
const SWITCH: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/formats/sched/sched_switch/format"
));
const WAKEUP: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/formats/sched/sched_wakeup/format"
));

/// This kernel's sched_process_fork format (from tracefs).
const FORK: &str = "name: sched_process_fork
ID: 366
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;

print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", __get_str(parent_comm), REC->parent_pid, __get_str(child_comm), REC->child_pid
";

/// A small LCG: deterministic pseudo-random numbers.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

fn raw(ty: u16, pid: i32, len: usize) -> Vec<u8> {
    let mut r = vec![0u8; len];
    r[0..2].copy_from_slice(&ty.to_le_bytes());
    r[4..8].copy_from_slice(&pid.to_le_bytes());
    r
}

fn comm(r: &mut [u8], at: usize, tid: i32) {
    let s = format!("task-{}", tid % 13);
    r[at..at + s.len()].copy_from_slice(s.as_bytes());
}

/// A perf.data file of `rounds` rounds, each a sorted run of switches and
/// wakeups per CPU (4 CPUs), written as perf writes them: a round's events
/// overlap the previous round's in time but are never older than the one
/// before it, times repeat (ties across CPUs), and some rounds are empty
/// on some CPUs. `late`: (round, CPU) whose first event is instead older
/// than everything two rounds back.
fn generated(rounds: u64, seed: u64, late: Option<(u64, u32)>) -> Vec<u8> {
    generated_with(rounds, seed, late, false)
}

/// [`generated`]; `forks`: thread 60 forks thread 61 in round 10, and the
/// file carries schedscope's task-cgroup section naming 60's cgroup only,
/// so that 61 inherits it through the fork event.
fn generated_with(rounds: u64, seed: u64, late: Option<(u64, u32)>, forks: bool) -> Vec<u8> {
    let attrs: Vec<AttrSpec> = [
        (372u64, "sched:sched_switch", 100u64),
        (374, "sched:sched_wakeup", 200),
        (366, "sched:sched_process_fork", 300),
    ][..if forks { 3 } else { 2 }]
        .iter()
        .map(|&(cfg, name, id)| AttrSpec {
            attr: EventAttr::tracepoint(cfg),
            name: name.into(),
            ids: (0..4).map(|c| id + c).collect(),
        })
        .collect();
    let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), attrs).unwrap();
    let mut seed = seed;
    w.comm(1, 1, "init", 0).unwrap();
    w.finished_round().unwrap();
    for k in 0..rounds {
        for cpu in 0..4u32 {
            // round k spans [k*1000 - 300, k*1000 + 1000)
            let mut t = (k * 1000 + 300).saturating_sub(300 + lcg(&mut seed) % 300);
            let n = lcg(&mut seed) % 40 + u64::from(late.is_some_and(|l| l == (k, cpu)));
            for i in 0..n {
                t += (lcg(&mut seed) % 3) * 7; // ties when 0
                let t = match late {
                    Some((r, c)) if r == k && c == cpu && i == 0 => t.saturating_sub(2500),
                    _ => t,
                };
                let tid = (lcg(&mut seed) % 50) as i32 + 2;
                if lcg(&mut seed).is_multiple_of(3) {
                    let mut r = raw(374, tid + 1, 36);
                    comm(&mut r, 8, tid);
                    r[24..28].copy_from_slice(&tid.to_le_bytes());
                    r[32..36].copy_from_slice(&(tid % 4).to_le_bytes());
                    w.sample_tracepoint(
                        200 + u64::from(cpu),
                        tid as u32 + 1,
                        tid as u32 + 1,
                        t,
                        cpu,
                        &r,
                    )
                    .unwrap();
                } else {
                    let next = (lcg(&mut seed) % 50) as i32;
                    let mut r = raw(372, tid, 64);
                    comm(&mut r, 8, tid);
                    r[24..28].copy_from_slice(&tid.to_le_bytes());
                    r[32..40].copy_from_slice(&((lcg(&mut seed) % 2) as i64).to_le_bytes());
                    comm(&mut r, 40, next);
                    r[56..60].copy_from_slice(&next.to_le_bytes());
                    w.sample_tracepoint(100 + u64::from(cpu), tid as u32, tid as u32, t, cpu, &r)
                        .unwrap();
                }
            }
        }
        if forks && k == 10 {
            // sched_process_fork: parent_comm and child_comm as __data_loc
            // strings after the fixed fields
            let mut r = raw(366, 60, 32);
            r[8..12].copy_from_slice(&((4u32 << 16) | 24).to_le_bytes());
            r[12..16].copy_from_slice(&60i32.to_le_bytes());
            r[16..20].copy_from_slice(&((4u32 << 16) | 28).to_le_bytes());
            r[20..24].copy_from_slice(&61i32.to_le_bytes());
            r[24..28].copy_from_slice(b"p60\0");
            r[28..32].copy_from_slice(b"c61\0");
            w.sample_tracepoint(300, 60, 60, k * 1000 + 500, 0, &r)
                .unwrap();
        }
        w.finished_round().unwrap();
    }
    let mut td = TracingData {
        page_size: 4096,
        ..TracingData::default()
    };
    td.add_event_format("sched", SWITCH.as_bytes().to_vec());
    td.add_event_format("sched", WAKEUP.as_bytes().to_vec());
    if forks {
        td.add_event_format("sched", FORK.as_bytes().to_vec());
    }
    let features = Features {
        tracing_data: Some(td.to_bytes().unwrap()),
        nr_cpus: Some((4, 4)),
        extra: if forks {
            let e = schedscope_perf_data::sections::TaskCgroup {
                tid: 60,
                pid: 60,
                ts: 0,
                path: "/L1/C1".into(),
            };
            vec![(
                schedscope_perf_data::abi::feature::SCHEDSCOPE_TASK_CGROUPS,
                schedscope_perf_data::sections::encode_task_cgroups(&[e]),
            )]
        } else {
            Vec::new()
        },
        ..Features::default()
    };
    w.finish(&features).unwrap().0.into_inner()
}

#[test]
fn generated_multi_round_files_stream_as_they_load() {
    for seed in 1..3 {
        // big enough for several decoding chunks and windows
        let data = generated(3000, seed, None);
        assert!(data.len() > 9 << 20, "{}", data.len());
        for opts in option_sets() {
            let batches = same_as_load("gen.data", &data, &opts).unwrap();
            assert!(batches > 2000, "delivered round by round: {batches}");
        }
    }
}

#[test]
fn a_file_that_breaks_the_round_rule_is_refused() {
    let data = generated(40, 3, Some((20, 2)));
    let opts = LoadOptions::default();
    let mut c = Collect::default();
    match stream_bytes("late.data", &data, &opts, &|_| {}, &mut c) {
        Err(StreamError::Unstreamable { why, path }) => {
            assert_eq!(path, "late.data");
            assert!(why.contains("round"), "{why}");
        }
        r => panic!("streamed: {:?}", r.map(|_| ())),
    }
    // the loader reads it (the late event in its time order)
    let l = load_bytes_with("late.data", &data, &opts).unwrap();
    assert!(l.events.windows(2).all(|w| w[0].ts <= w[1].ts));
}

/// `load_through_stream` (what `load_with` does from `STREAM_LOAD_FROM`
/// bytes on) goes through the stream when it can and loads whole when the
/// stream refuses (compressed records, a file that breaks the round
/// rule): either way the trace is the whole decode's (`load_bytes_with`,
/// which never streams).
#[test]
fn load_with_streams_or_falls_back_to_the_whole_decode() {
    let dir = std::env::temp_dir().join(format!("schedscope-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let late = dir.join("late.data");
    std::fs::write(&late, generated(40, 3, Some((20, 2)))).unwrap();
    let gen = dir.join("gen.data");
    std::fs::write(&gen, generated(300, 5, None)).unwrap();
    let mut files = fixtures();
    files.push(late);
    files.push(gen);
    let mut fell_back = 0;
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let name = f.display().to_string();
        for opts in option_sets() {
            let decoded = AtomicU64::new(0);
            let got = schedscope_parser::load_through_stream(f, &opts, &decoded);
            let want = load_bytes_with(&name, &data, &opts);
            match (got, want) {
                (Ok(g), Ok(w)) => {
                    assert!(g.events == w.events, "{name} {opts:?}: events differ");
                    assert_eq!(meta(&g), meta(&w), "{name} {opts:?}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name}"),
                (g, w) => panic!("{name}: {:?} but {:?}", g.map(|_| ()), w.map(|_| ())),
            }
            let mut c = Collect::default();
            if stream_bytes(&name, &data, &opts, &|_| {}, &mut c).is_err() {
                fell_back += 1;
                // the refused stream's bytes are not counted twice
                let counted = decoded.load(std::sync::atomic::Ordering::Relaxed);
                assert!(counted <= data.len() as u64, "{name}: {counted}");
            }
        }
    }
    // the late file and the compressed fixtures took the fallback
    assert!(fell_back >= 4 * 2, "{fell_back}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Threads born during the recording inherit their parent's cgroup from
/// the task-cgroup section through the fork events: a stream, whose
/// trace has no events when the sections are read, does it from the fork
/// events it keeps, as the loader does from its events.
#[test]
fn streamed_task_cgroups_are_inherited_through_forks_as_loaded() {
    let data = generated_with(200, 7, None, true);
    let l = load_bytes_with("forks.data", &data, &LoadOptions::default()).unwrap();
    let cg = l
        .tasks
        .by_tid(schedscope_trace::Tid(61))
        .and_then(|t| t.cgroup.clone());
    assert_eq!(cg.as_deref(), Some("/L1/C1"), "inherited when loaded");
    for opts in option_sets() {
        same_as_load("forks.data", &data, &opts).unwrap();
    }
}
