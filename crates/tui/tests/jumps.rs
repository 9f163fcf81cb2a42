//! Enter on the rows whose jump target is searched for ([`schedscope_tui::jumps`]):
//! lhp waker pairs, IPI callsites, profile symbols. Each lands where the
//! trace's own events say, computed here from the fixture's text form (or
//! from the generated events) without the analyses.

mod common;

use common::*;
use ratatui::crossterm::event::KeyCode;
use schedscope_tui::App;
use std::collections::HashMap;

fn path(rel: &str) -> String {
    format!("{}/../../fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// One ftrace text line: time (ns), the pid of the running task, the
/// event name and its `key=value` fields.
struct Line {
    ns: u64,
    pid: i32,
    event: String,
    fields: HashMap<String, String>,
}

fn parse(rel: &str) -> Vec<Line> {
    let text = std::fs::read_to_string(path(rel)).expect("fixture text");
    let mut out = Vec::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(open) = l.find(" (") else { continue };
        let task = l[..open].trim();
        let pid: i32 = task.rsplit('-').next().unwrap().parse().unwrap();
        let Some((_, rest)) = l.split_once("] ") else {
            continue;
        };
        let mut it = rest.split_whitespace();
        let _flags = it.next();
        let ts = it.next().unwrap().trim_end_matches(':');
        let event = it.next().unwrap().trim_end_matches(':').to_string();
        let (s, us) = ts.split_once('.').unwrap();
        let ns = s.parse::<u64>().unwrap() * 1_000_000_000 + us.parse::<u64>().unwrap() * 1000;
        let fields = it
            .filter_map(|f| f.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        out.push(Line {
            ns,
            pid,
            event,
            fields,
        });
    }
    out
}

fn field(l: &Line, k: &str) -> i32 {
    l.fields[k].parse().unwrap()
}

/// Select tab `tab` (1-based key) and the first row where `pick` holds,
/// then press Enter.
fn enter_on(app: &mut App, tab: char, pick: impl Fn(&[String]) -> bool) {
    keys(app, &tab.to_string());
    let t = tab.to_digit(10).unwrap() as usize - 2;
    let row = app.data().unwrap().tables.tabs[t]
        .rows
        .iter()
        .position(|r| pick(&r.cells))
        .expect("the row");
    for _ in 0..row {
        keys(app, "j");
    }
    key(app, KeyCode::Enter);
    assert_eq!(app.tab, 0, "Enter jumps to the timeline: {}", app.message);
}

#[test]
fn waker_pair_jumps_to_its_longest_waker_preempted_wait() {
    let rel = "sim/bare-metal-s1.txt";
    let lines = parse(rel);
    // Per task, from the text: when it became Runnable without a CPU
    // (preempted: switched out with R; woken) until it was switched in.
    let mut runnable: HashMap<i32, Vec<(u64, u64)>> = HashMap::new();
    let mut since: HashMap<i32, u64> = HashMap::new();
    // Per task: when it went to sleep (S/D switch-out), until woken.
    let mut asleep: HashMap<i32, u64> = HashMap::new();
    // (waker, wakee) -> [(sleep start, wakeup)]
    let mut wakes: HashMap<(i32, i32), Vec<(u64, u64)>> = HashMap::new();
    for l in &lines {
        match l.event.as_str() {
            "sched_switch" => {
                let (prev, next) = (field(l, "prev_pid"), field(l, "next_pid"));
                if prev != 0 {
                    if l.fields["prev_state"] == "R" || l.fields["prev_state"] == "R+" {
                        since.insert(prev, l.ns);
                    } else {
                        asleep.insert(prev, l.ns);
                    }
                }
                if let Some(t0) = since.remove(&next) {
                    runnable.entry(next).or_default().push((t0, l.ns));
                }
            }
            "sched_wakeup" => {
                let wakee = field(l, "pid");
                if let Some(s) = asleep.remove(&wakee) {
                    wakes.entry((l.pid, wakee)).or_default().push((s, l.ns));
                    since.insert(wakee, l.ns);
                }
            }
            _ => {}
        }
    }
    let mut app = fixture_app("sim/bare-metal-s1.data");
    let (waker, wakee) = {
        let d = app.data().unwrap();
        let l = d.report.lhp.as_ref().unwrap().0.as_ref().unwrap();
        let p = &l.waker_preempted.0.as_ref().unwrap().pairs[0];
        (p.waker.0, p.wakee.0)
    };
    let overlap = |a: u64, b: u64| -> u64 {
        runnable.get(&waker).map_or(0, |v| {
            v.iter()
                .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
                .sum()
        })
    };
    let mut best = (0u64, 0u64, 0u64);
    for &(s, w) in &wakes[&(waker, wakee)] {
        let ns = overlap(s, w);
        if ns > best.0 {
            best = (ns, s, w);
        }
    }
    assert!(
        best.0 > 0,
        "pair {waker} > {wakee} has waker-preempted time"
    );
    let want = format!("{waker}>{wakee} ");
    enter_on(&mut app, '4', |c| {
        c[0] == "waker>wakee" && c[1].starts_with(&want)
    });
    assert_eq!(app.view.cursor, best.1, "{}", app.message);
    assert!(app.view.start <= best.1 && best.2 <= app.view.end());
    assert_eq!(app.selected, vec![wakee]);
    let s = screen(&mut app, 200, 20);
    let msg = format!("Runnable {} of it)", schedscope_tui::view::fmt_dur(best.0));
    assert!(
        s[19].starts_with("jumped to the longest waker-preempted wait of") && s[19].contains(&msg),
        "{}",
        s[19]
    );
}

#[test]
fn callsite_jumps_to_its_densest_burst() {
    let rel = "tlb/tracefs-tlb.txt";
    let lines = parse(rel);
    let mut app = fixture_app(rel);
    let (site, cb, count) = {
        let d = app.data().unwrap();
        let t = d.report.tlb.as_ref().unwrap().0.as_ref().unwrap();
        let c = t
            .top_callsites
            .iter()
            .find(|c| c.callback == "flush_tlb_func")
            .expect("a shootdown callsite");
        (c.callsite.clone(), c.callback.clone(), c.count)
    };
    // On 2 CPUs every request is one csd_queue_cpu line (README).
    let mut times: Vec<u64> = lines
        .iter()
        .filter(|l| l.event == "csd_queue_cpu")
        .filter(|l| {
            l.fields["callsite"].split('+').next() == Some(site.as_str())
                && l.fields["func"].split('+').next() == Some(cb.as_str())
        })
        .map(|l| l.ns)
        .collect();
    times.sort_unstable();
    assert_eq!(
        times.len() as u64,
        count,
        "{site} -> {cb} lines vs the report"
    );
    let (first, last) = densest(&times, 1_000_000);
    enter_on(&mut app, '6', |c| {
        c[0] == "callsite" && c[1] == format!("{site} -> {cb}")
    });
    assert_eq!(app.view.cursor, first, "{}", app.message);
    assert!(app.view.start <= first && last < app.view.end());
    assert!(
        app.message.starts_with(&format!(
            "jumped to the densest 1 ms of requests from {site} -> {cb} ("
        )),
        "{}",
        app.message
    );
}

/// The densest `w`-ns window of `times` (sorted), by brute force.
fn densest(times: &[u64], w: u64) -> (u64, u64) {
    let mut best = (0, 0, 0);
    for (i, &t) in times.iter().enumerate() {
        let inside: Vec<u64> = times[i..].iter().copied().filter(|&u| u < t + w).collect();
        if inside.len() > best.2 {
            best = (t, *inside.last().unwrap(), inside.len());
        }
    }
    (best.0, best.1)
}

#[test]
fn profile_row_jumps_to_the_densest_samples_of_its_symbol() {
    use schedscope_trace::{
        Cpu, Event, EventData, KernelSymbols, StackId, Tid, Trace, TraceFormat, Ts,
    };
    const K: u64 = 0xffff_ffff_8100_0000;
    const CTX_KERNEL: u64 = (-128i64) as u64;
    const MS: u64 = 1_000_000;
    let mut t = Trace::new("gen", TraceFormat::PerfData);
    t.kernel_symbols = KernelSymbols {
        syms: vec![
            (K, "hot_fn".into()),
            (K + 0x100, "cold_fn".into()),
            (K + 0x200, "_etext".into()),
        ],
    };
    t.tasks.fork(Tid(100), Some(Tid(100)), "app", None);
    t.stacks.push(vec![CTX_KERNEL, K + 8]);
    t.stacks.push(vec![CTX_KERNEL, K + 0x108]);
    let name = t.intern_name("cpu-clock");
    // hot_fn: 1 sample every 20 ms, plus 6 within 9 ms from 100 ms;
    // cold_fn: 12 samples within 10 ms at 300 ms (denser, other symbol)
    let mut hot: Vec<u64> = (0..20).map(|i| i * 20 * MS + 13 * MS).collect();
    hot.extend([100, 101, 103, 105, 107, 109].iter().map(|m| m * MS + 500));
    hot.sort_unstable();
    let cold: Vec<u64> = (0..12).map(|i| 300 * MS + i * 800_000).collect();
    let mut evs: Vec<(u64, u32)> = hot.iter().map(|&x| (x, 0)).collect();
    evs.extend(cold.iter().map(|&x| (x, 1)));
    evs.sort_unstable();
    for (ts, s) in evs {
        t.events.push(Event {
            ts: Ts(ts),
            cpu: Cpu(0),
            tid: Tid(100),
            name,
            stack: StackId(s),
            data: EventData::Other(None),
        });
    }
    *t.events_by_name.entry("cpu-clock".into()).or_default() += (hot.len() + cold.len()) as u64;
    t.finish();
    let data = schedscope_tui::Data::from_trace(t, &|_| {});
    let mut app = App::with_data("gen.data", data, false);
    let (first, last) = densest(&hot, 10 * MS);
    assert_eq!(first, 100 * MS + 500, "the test's own truth");
    enter_on(&mut app, '6', |c| {
        c[0] == "profile" && c[1].starts_with("hot_fn ")
    });
    assert_eq!(app.view.cursor, first, "{}", app.message);
    assert!(app.view.start <= first && last < app.view.end());
    assert_eq!(
        app.message,
        "jumped to the densest 10 ms of samples in hot_fn (6 in it)"
    );
}
