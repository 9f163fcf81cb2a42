//! The tlb analysis on a real tracefs text fixture (fixtures/tlb, see its
//! README for provenance), checked against counts and pairings computed
//! here by plain text matching of the same file, independently of the
//! schedscope decoders: csd_queue_cpu lines per `func=`, reschedule IPIs
//! (`callback=0x0`), tlb_flush lines per reason, queue -> entry delivery of
//! shootdowns, and the target CPUs' current task (last sched_switch) at send.

use schedscope_analysis::tlb::{self, IpiClass};
use schedscope_analysis::{Context, Options, Timeline};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tlb/tracefs-tlb.txt")
}

/// One parsed line: (task pid, tgid, cpu, ts in ns, event, fields).
struct Line<'a> {
    pid: i32,
    tgid: i32,
    cpu: u32,
    ts: u64,
    event: &'a str,
    rest: &'a str,
}

fn parse(l: &str) -> Option<Line<'_>> {
    // "  comm-PID    (  TGID) [CPU] flags  SECS.USECS: event: fields"
    let open = l.find("(")?;
    let close = l.find(")")?;
    let pid = l[..open].trim_end().rsplit('-').next()?.parse().ok()?;
    let tgid = l[open + 1..close].trim().parse().unwrap_or(-1);
    let b = l.find('[')?;
    let e = l.find(']')?;
    let cpu = l[b + 1..e].parse().ok()?;
    let after = &l[e + 1..];
    let mut it = after.splitn(3, ": ");
    let head = it.next()?;
    let event = it.next()?;
    let rest = it.next().unwrap_or("");
    let ts_text = head.split_whitespace().last()?;
    let (s, us) = ts_text.split_once('.')?;
    let ts = s.parse::<u64>().ok()? * 1_000_000_000 + us.parse::<u64>().ok()? * 1000;
    Some(Line {
        pid,
        tgid,
        cpu,
        ts,
        event,
        rest,
    })
}

fn field<'a>(rest: &'a str, key: &str) -> Option<&'a str> {
    let i = rest.find(key)?;
    rest[i + key.len()..]
        .split([' ', ','])
        .next()
        .map(|v| v.split('+').next().unwrap_or(v))
}

#[test]
fn tracefs_fixture_matches_text_matching() {
    let path = fixture();
    let trace = schedscope_parser::load(&path).unwrap();
    let tl = Timeline::build(&trace);
    let opts = Options {
        top: 10,
        ..Options::default()
    };
    let ctx = Context {
        trace: &trace,
        timeline: &tl,
        opts: &opts,
    };
    let r = tlb::analyze(&ctx).unwrap();

    let text = std::fs::read_to_string(&path).unwrap();
    let mut per_class: HashMap<IpiClass, u64> = HashMap::new();
    let mut resched = 0u64;
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    // (target cpu, csd) -> queue ts of pending shootdowns.
    let mut pending: HashMap<(u32, String), u64> = HashMap::new();
    let mut deliveries: Vec<u64> = Vec::new();
    // cpu -> (current pid, its tgid) from the last sched_switch.
    let mut current: HashMap<u32, i32> = HashMap::new();
    let mut tgid_of: HashMap<i32, i32> = HashMap::new();
    let (mut idle, mut same, mut busy) = (0u64, 0u64, 0u64);
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(p) = parse(l) else { continue };
        if p.tgid > 0 {
            tgid_of.insert(p.pid, p.tgid);
        }
        match p.event {
            "sched_switch" => {
                let next: i32 = field(p.rest, "next_pid=").unwrap().parse().unwrap();
                current.insert(p.cpu, next);
            }
            "csd_queue_cpu" => {
                let func = field(p.rest, "func=").unwrap();
                let class = IpiClass::of_function(Some(func));
                *per_class.entry(class).or_default() += 1;
                if class == IpiClass::TlbShootdown {
                    let target: u32 = field(p.rest, "cpu=").unwrap().parse().unwrap();
                    let csd = field(p.rest, "csd=").unwrap().to_string();
                    pending.insert((target, csd), p.ts);
                    match current.get(&target) {
                        Some(0) => idle += 1,
                        Some(cur) if tgid_of.get(cur) == Some(&p.tgid) => same += 1,
                        Some(_) => busy += 1,
                        None => {}
                    }
                }
            }
            "csd_function_entry" => {
                let csd = field(p.rest, "csd=").unwrap().to_string();
                if let Some(q) = pending.remove(&(p.cpu, csd)) {
                    deliveries.push(p.ts - q);
                }
            }
            "ipi_send_cpu" if field(p.rest, "callback=") == Some("0x0") => resched += 1,
            "tlb_flush" => {
                let i = p.rest.find("reason:").unwrap();
                let name = p.rest[i + 7..].rsplit_once(" (").unwrap().0;
                *reasons.entry(name.to_string()).or_default() += 1;
            }
            _ => {}
        }
    }

    let got = |c: IpiClass| {
        r.ipi_classes
            .iter()
            .find(|x| x.class == c)
            .map(|x| x.targets)
            .unwrap_or(0)
    };
    assert!(r.shootdowns > 0);
    for c in [
        IpiClass::TlbShootdown,
        IpiClass::RemoteWakeup,
        IpiClass::IdleBalanceKick,
    ] {
        assert_eq!(got(c), per_class.get(&c).copied().unwrap_or(0), "{c:?}");
    }
    assert_eq!(got(IpiClass::Reschedule), resched);
    let ours: BTreeMap<String, u64> = r
        .tlb_flush_by_reason
        .iter()
        .map(|(k, v)| (k.clone(), v.count))
        .collect();
    assert_eq!(ours, reasons);

    let tlbc = r
        .ipi_classes
        .iter()
        .find(|c| c.class == IpiClass::TlbShootdown)
        .unwrap();
    let d = tlbc.delivery.as_ref().unwrap();
    deliveries.sort_unstable();
    assert_eq!(d.count, deliveries.len() as u64);
    assert_eq!(d.max_ns, *deliveries.last().unwrap());
    assert_eq!(d.p50_ns, deliveries[deliveries.len().div_ceil(2) - 1]);

    let s = &r.targets_at_send;
    assert_eq!(s.idle, idle);
    assert_eq!(s.same_process, same);
    assert_eq!(s.other_process + s.running_unknown_process, busy);
    assert!(r
        .top_callsites
        .iter()
        .any(|c| c.class == IpiClass::TlbShootdown
            && c.callback == "flush_tlb_func"
            && c.callsite == "on_each_cpu_cond_mask"));
}
