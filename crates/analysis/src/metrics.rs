//! The headline numbers of a report, long form: what the Parquet export's
//! `summary_metric` table holds and what `schedscope diff` compares (one
//! [`Run`] per trace).
//!
//! Each number is read from the report structs (the same ones the text and
//! JSON reports show); entities are named by their cross-run
//! [`crate::keys`] so that runs can be compared.

use crate::keys::{By, ProcessKeys, ThreadKeys};
use crate::report::Section;
use crate::stats::percentile_nearest_rank;
use crate::{gang, idle, latency, lhp, tlb, Report};
use schedscope_trace::{Tid, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which direction is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Smaller is better (latency, idle, exits).
    Lower,
    /// Larger is better (co-run ratio, work done).
    Higher,
}

impl Better {
    /// `lower` / `higher`.
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }

    /// From `lower` / `higher`.
    pub fn parse(s: &str) -> Option<Better> {
        match s {
            "lower" => Some(Better::Lower),
            "higher" => Some(Better::Higher),
            _ => None,
        }
    }
}

/// One headline number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Report section (`latency`, `gang`, `lhp`, `idle`, `tlb`).
    pub section: String,
    /// Metric name.
    pub metric: String,
    /// `trace`, `task_group` (`thread` with `--by ordinal`), `gang`, `vm`,
    /// `class`.
    pub entity_kind: String,
    /// Cross-run key of the entity (`""` for the whole trace).
    pub entity_key: String,
    /// `value`, `mean`, `max`, `min`, `stddev`, `total`, `share`, `rate`,
    /// `p50`, `p99`.
    pub stat: String,
    /// The number.
    pub value: f64,
    /// `ns`, `pct`, `ratio`, `count`, `per_s`, `ns_per_s`.
    pub unit: String,
    /// Which direction is better.
    pub better: Better,
    /// How many items the number summarises.
    pub n: u64,
}

/// The metrics of one run (a trace, or one run of a Parquet root).
#[derive(Clone, Debug)]
pub struct Run {
    /// Where it came from (file, or `root run=<id>`).
    pub label: String,
    /// Its metrics.
    pub metrics: Vec<Metric>,
}

/// Unit and direction of a metric.
type Kind = (&'static str, Better);
const NS_LO: Kind = ("ns", Better::Lower);
const NS_HI: Kind = ("ns", Better::Higher);
const PCT_LO: Kind = ("pct", Better::Lower);
const COUNT_LO: Kind = ("count", Better::Lower);
const COUNT_HI: Kind = ("count", Better::Higher);
const RATE_LO: Kind = ("per_s", Better::Lower);
const RATIO_LO: Kind = ("ratio", Better::Lower);
const RATIO_HI: Kind = ("ratio", Better::Higher);
const WORK_HI: Kind = ("ns_per_s", Better::Higher);
const WORK_LO: Kind = ("ns_per_s", Better::Lower);

/// Metrics of one entity.
struct At<'o> {
    out: &'o mut Vec<Metric>,
    section: &'static str,
    kind: &'static str,
    key: String,
}

impl At<'_> {
    fn put(&mut self, metric: &str, stat: &str, value: f64, (unit, better): Kind, n: u64) {
        if value.is_finite() {
            self.out.push(Metric {
                section: self.section.into(),
                metric: metric.into(),
                entity_kind: self.kind.into(),
                entity_key: self.key.clone(),
                stat: stat.into(),
                value,
                unit: unit.into(),
                better,
                n,
            });
        }
    }
}

fn at<'o>(
    out: &'o mut Vec<Metric>,
    section: &'static str,
    kind: &'static str,
    key: &str,
) -> At<'o> {
    At {
        out,
        section,
        kind,
        key: key.to_string(),
    }
}

fn ok<T>(s: &Option<Section<T>>) -> Option<&T> {
    s.as_ref().and_then(|s| s.0.as_ref().ok())
}

/// The sections that were computed (borrowed from a [`Report`] or from
/// the analyses run one by one).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sections<'a> {
    /// Latency.
    pub latency: Option<&'a latency::LatencyReport>,
    /// Gang co-run.
    pub gang: Option<&'a gang::GangReport>,
    /// Lock-holder preemption.
    pub lhp: Option<&'a lhp::LhpReport>,
    /// Idle under bandwidth.
    pub idle: Option<&'a idle::IdleReport>,
    /// TLB shootdowns.
    pub tlb: Option<&'a tlb::TlbReport>,
}

impl<'a> Sections<'a> {
    /// The sections of `report` that succeeded.
    pub fn of(report: &'a Report) -> Sections<'a> {
        Sections {
            latency: ok(&report.latency),
            gang: ok(&report.gang),
            lhp: ok(&report.lhp),
            idle: ok(&report.idle),
            tlb: ok(&report.tlb),
        }
    }
}

/// The headline numbers of every section `report` computed.
pub fn of_report(trace: &Trace, report: &Report, by: By) -> Vec<Metric> {
    of_sections(trace, &Sections::of(report), by)
}

/// The headline numbers of the given sections, entities keyed `by`.
pub fn of_sections(trace: &Trace, s: &Sections, by: By) -> Vec<Metric> {
    let keys = ProcessKeys::new(&trace.tasks, by);
    let mut out = Vec::new();
    if let Some(l) = s.latency {
        let group = match by {
            By::Ordinal => Group::Thread(ThreadKeys::new(&trace.tasks)),
            By::Comm | By::Pid => Group::Process(&keys),
        };
        latency_metrics(&mut out, &group, l);
    }
    if let Some(g) = s.gang {
        for gang in &g.gangs {
            let mut a = at(&mut out, "gang", "gang", &keys.key(gang.tgid, &gang.name));
            let n = gang.members.len() as u64;
            a.put("corun_ratio", "value", gang.corun_ratio, RATIO_HI, n);
            a.put("fragmented", "total", gang.fragmented_ns as f64, NS_LO, n);
            a.put(
                "fragmented_ratio",
                "value",
                gang.fragmented_ratio,
                RATIO_LO,
                n,
            );
        }
    }
    if let Some(l) = s.lhp {
        if let Ok(p) = &l.ple.0 {
            let mut a = at(&mut out, "lhp", "trace", "");
            a.put("ple_exits", "total", p.total as f64, COUNT_LO, p.total);
            a.put("ple_exits", "rate", p.per_second, RATE_LO, p.total);
            if p.total > 0 {
                let share = |x: u64| x as f64 / p.total as f64 * 100.0;
                a.put(
                    "sibling_preempted",
                    "share",
                    share(p.sibling_preempted),
                    PCT_LO,
                    p.total,
                );
                a.put(
                    "all_running",
                    "share",
                    share(p.all_running),
                    PCT_LO,
                    p.total,
                );
                a.put(
                    "siblings_idle",
                    "share",
                    share(p.siblings_idle),
                    PCT_LO,
                    p.total,
                );
            }
            for vm in &p.per_vm {
                let mut a = at(&mut out, "lhp", "vm", &keys.key(vm.tgid, &vm.name));
                a.put("ple_exits", "rate", vm.per_second, RATE_LO, vm.total);
            }
        }
        if let Ok(w) = &l.waker_preempted.0 {
            let mut a = at(&mut out, "lhp", "trace", "");
            a.put(
                "waker_preempted",
                "total",
                w.total_ns as f64,
                NS_LO,
                w.wakeups,
            );
        }
    }
    if let Some(i) = s.idle {
        idle_metrics(&mut out, i);
    }
    if let Some(t) = s.tlb {
        let mut a = at(&mut out, "tlb", "trace", "");
        a.put(
            "shootdowns",
            "total",
            t.shootdowns as f64,
            COUNT_LO,
            t.shootdowns,
        );
        a.put(
            "shootdowns",
            "rate",
            t.shootdowns_per_second,
            RATE_LO,
            t.shootdowns,
        );
        for c in &t.ipi_classes {
            let mut a = at(&mut out, "tlb", "class", c.class.label());
            a.put("requests", "rate", c.per_second, RATE_LO, c.count);
            if c.count > 0 {
                let targets = c.targets as f64 / c.count as f64;
                a.put("targets", "mean", targets, COUNT_LO, c.count);
            }
            if let Some(d) = &c.delivery {
                a.put("delivery_latency", "mean", d.mean_ns as f64, NS_LO, d.count);
                a.put("delivery_latency", "max", d.max_ns as f64, NS_LO, d.count);
            }
            if let Some(d) = &c.handler {
                a.put("handler_latency", "mean", d.mean_ns as f64, NS_LO, d.count);
            }
        }
    }
    out
}

/// How latency rows group tasks: per process (task group, `--by comm` and
/// `--by pid`), or per thread (`--by ordinal`: threads paired by start
/// order within their match key).
enum Group<'a> {
    /// Entity kind `task_group`, keyed by process.
    Process(&'a ProcessKeys),
    /// Entity kind `thread`, keyed `match_key#match_ordinal`.
    Thread(ThreadKeys),
}

impl Group<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Group::Process(_) => "task_group",
            Group::Thread(_) => "thread",
        }
    }

    fn key(&self, t: &latency::TaskLatency) -> String {
        match self {
            Group::Process(k) => k.key(t.tgid.map(Tid), &t.comm),
            Group::Thread(k) => k.key(Tid(t.tid), &t.comm),
        }
    }
}

fn latency_metrics(out: &mut Vec<Metric>, group: &Group, l: &latency::LatencyReport) {
    let mut a = at(out, "latency", "trace", "");
    let sw = l.total_switches;
    a.put("switches", "total", sw as f64, COUNT_HI, sw);
    a.put(
        "wakeups",
        "total",
        l.total_wakeups as f64,
        COUNT_HI,
        l.total_wakeups,
    );
    let max = l.tasks.iter().map(|t| t.delay_max_ns).max().unwrap_or(0);
    a.put("delay", "max", max as f64, NS_LO, sw);
    let total: u64 = l.tasks.iter().map(|t| t.delay_total_ns).sum();
    if sw > 0 {
        a.put("delay", "mean", total as f64 / sw as f64, NS_LO, sw);
    }
    let mut all: Vec<u64> = l.tasks.iter().flat_map(|t| &t.delays_ns).copied().collect();
    percentiles(&mut a, &mut all);
    // Per task group (process), or per thread with --by ordinal: max, mean,
    // p50 and p99 delay, run time.
    let mut groups: BTreeMap<String, (u64, u64, u64, u64, Vec<u64>)> = BTreeMap::new();
    for t in &l.tasks {
        let g = groups.entry(group.key(t)).or_default();
        g.0 = g.0.max(t.delay_max_ns);
        g.1 += t.delay_total_ns;
        g.2 += t.switches;
        g.3 += t.runtime_ns;
        g.4.extend_from_slice(&t.delays_ns);
    }
    for (key, (max, total, n, run, delays)) in &mut groups {
        let mut a = at(out, "latency", group.kind(), key);
        a.put("delay", "max", *max as f64, NS_LO, *n);
        if *n > 0 {
            a.put("delay", "mean", *total as f64 / *n as f64, NS_LO, *n);
        }
        percentiles(&mut a, delays);
        a.put("runtime", "total", *run as f64, NS_HI, *n);
    }
}

/// `delay` p50 and p99 (nearest rank, the analyses' one percentile routine)
/// of the waits `v` (sorted here), when there are any.
fn percentiles(a: &mut At, v: &mut [u64]) {
    v.sort_unstable();
    let n = v.len() as u64;
    for (stat, p) in [("p50", 50.0), ("p99", 99.0)] {
        if let Some(x) = percentile_nearest_rank(v, p) {
            a.put("delay", stat, x as f64, NS_LO, n);
        }
    }
}

fn idle_metrics(out: &mut Vec<Metric>, i: &idle::IdleReport) {
    let mut a = at(out, "idle", "trace", "");
    let gaps = i.gaps.count;
    a.put(
        "idle",
        "total",
        i.idle_ns as f64,
        NS_LO,
        i.cpus.len() as u64,
    );
    a.put("wasted_idle", "total", i.wasted_idle_ns as f64, NS_LO, gaps);
    let cpu_ns = i.duration_ns as f64 * i.cpus.len() as f64;
    if cpu_ns > 0.0 {
        let pct = i.wasted_idle_ns as f64 / cpu_ns * 100.0;
        a.put("wasted_idle", "share", pct, PCT_LO, gaps);
    }
    a.put("throttled", "total", i.throttled_ns as f64, NS_LO, gaps);
    a.put("imbalance", "total", i.imbalance_ns as f64, NS_LO, gaps);
    let p = &i.per_second_idle_pct;
    let n = i.seconds;
    for (stat, v) in [
        ("mean", p.avg),
        ("stddev", p.stddev),
        ("min", p.min),
        ("max", p.max),
    ] {
        if let Some(v) = v {
            a.put("idle_pct_per_second", stat, v, PCT_LO, n);
        }
    }
    if let Some(v) = i.work_per_second_ns.avg {
        a.put("work_per_second", "mean", v, WORK_HI, n);
    }
    if let Some(v) = i.work_per_second_ns.stddev {
        a.put("work_per_second", "stddev", v, WORK_LO, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{TraceFormat, Ts};

    /// A process `bench` (leader `leader`) with two `worker` threads
    /// forked at 10 and 20 ns, with the given tids and max delays.
    fn run(leader: i32, workers: [(i32, u64); 2]) -> (Trace, latency::LatencyReport) {
        let mut trace = Trace::new("t", TraceFormat::FtraceText);
        let g = Some(Tid(leader));
        trace.tasks.fork(Tid(leader), g, "bench", Some(Ts(1)));
        let mut report = latency::LatencyReport::default();
        for (i, (tid, delay)) in workers.into_iter().enumerate() {
            trace
                .tasks
                .fork(Tid(tid), g, "worker", Some(Ts(10 * (i as u64 + 1))));
            report.tasks.push(latency::TaskLatency {
                tid,
                tgid: Some(leader),
                comm: "worker".into(),
                switches: 1,
                delay_max_ns: delay,
                delay_total_ns: delay,
                delays_ns: vec![delay],
                ..Default::default()
            });
        }
        (trace, report)
    }

    fn delay_max(trace: &Trace, l: &latency::LatencyReport, by: By) -> Vec<(String, String, f64)> {
        let s = Sections {
            latency: Some(l),
            ..Default::default()
        };
        of_sections(trace, &s, by)
            .into_iter()
            .filter(|m| m.metric == "delay" && m.stat == "max" && !m.entity_key.is_empty())
            .map(|m| (m.entity_kind, m.entity_key, m.value))
            .collect()
    }

    #[test]
    fn by_ordinal_pairs_threads_by_start_order_within_a_key() {
        // Run B's tids are in the other order than their starts: pairing
        // by start order, not by tid, gives each thread its own delay.
        let (ta, la) = run(100, [(101, 1_000), (102, 5_000)]);
        let (tb, lb) = run(300, [(307, 1_000), (305, 5_000)]);
        let want = vec![
            ("thread".to_string(), "bench/worker#0".to_string(), 1_000.0),
            ("thread".to_string(), "bench/worker#1".to_string(), 5_000.0),
        ];
        assert_eq!(delay_max(&ta, &la, By::Ordinal), want);
        assert_eq!(delay_max(&tb, &lb, By::Ordinal), want);
        // By comm the two threads are one task group (max of both).
        let group = vec![("task_group".to_string(), "bench".to_string(), 5_000.0)];
        assert_eq!(delay_max(&tb, &lb, By::Comm), group);
    }
}
