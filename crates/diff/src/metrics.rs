//! The headline numbers of a report, long form: what the `summary_metric`
//! table holds and what `schedscope diff` compares.
//!
//! Each number is read from the report structs (the same ones the text and
//! JSON reports show); entities are named by their cross-run
//! [`crate::keys`] so that runs can be compared.

use crate::keys::{comm_key, process_comm, thread_key};
use schedscope_analysis::report::Section;
use schedscope_analysis::{gang, idle, latency, lhp, tlb, Report};
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
}

/// One headline number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Report section (`latency`, `gang`, `lhp`, `idle`, `tlb`).
    pub section: String,
    /// Metric name.
    pub metric: String,
    /// `trace`, `task`, `task_group`, `gang`, `vm`, `class`.
    pub entity_kind: String,
    /// Cross-run key of the entity (`""` for the whole trace).
    pub entity_key: String,
    /// `value`, `mean`, `max`, `min`, `stddev`, `total`, `share`, `rate`.
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

struct Out(Vec<Metric>);

impl Out {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        section: &str,
        metric: &str,
        kind: &str,
        key: &str,
        stat: &str,
        value: f64,
        unit: &str,
        better: Better,
        n: u64,
    ) {
        if value.is_finite() {
            self.0.push(Metric {
                section: section.into(),
                metric: metric.into(),
                entity_kind: kind.into(),
                entity_key: key.into(),
                stat: stat.into(),
                value,
                unit: unit.into(),
                better,
                n,
            });
        }
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
pub fn of_report(trace: &Trace, report: &Report) -> Vec<Metric> {
    of_sections(trace, &Sections::of(report))
}

/// The headline numbers of the given sections.
pub fn of_sections(trace: &Trace, report: &Sections) -> Vec<Metric> {
    use Better::{Higher, Lower};
    let mut o = Out(Vec::new());
    if let Some(l) = report.latency {
        let s = "latency";
        o.push(
            s,
            "switches",
            "trace",
            "",
            "total",
            l.total_switches as f64,
            "count",
            Higher,
            l.total_switches,
        );
        o.push(
            s,
            "wakeups",
            "trace",
            "",
            "total",
            l.total_wakeups as f64,
            "count",
            Higher,
            l.total_wakeups,
        );
        let max = l.tasks.iter().map(|t| t.delay_max_ns).max().unwrap_or(0);
        o.push(
            s,
            "delay",
            "trace",
            "",
            "max",
            max as f64,
            "ns",
            Lower,
            l.total_switches,
        );
        let total: u64 = l.tasks.iter().map(|t| t.delay_total_ns).sum();
        if l.total_switches > 0 {
            o.push(
                s,
                "delay",
                "trace",
                "",
                "mean",
                total as f64 / l.total_switches as f64,
                "ns",
                Lower,
                l.total_switches,
            );
        }
        // Per task group (process comm): max and mean delay, run time.
        let mut groups: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
        for t in &l.tasks {
            let tgid = t.tgid.map(Tid);
            let key = thread_key(&trace.tasks, Tid(t.tid), tgid, &t.comm);
            let g = key.split('/').next().unwrap_or("").to_string();
            let g = if key.starts_with("kworker/") {
                comm_key(process_comm(&trace.tasks, tgid, &t.comm))
            } else {
                g
            };
            let e = groups.entry(g).or_default();
            e.0 = e.0.max(t.delay_max_ns);
            e.1 += t.delay_total_ns;
            e.2 += t.switches;
            e.3 += t.runtime_ns;
        }
        for (g, (max, total, n, run)) in &groups {
            o.push(
                s,
                "delay",
                "task_group",
                g,
                "max",
                *max as f64,
                "ns",
                Lower,
                *n,
            );
            if *n > 0 {
                o.push(
                    s,
                    "delay",
                    "task_group",
                    g,
                    "mean",
                    *total as f64 / *n as f64,
                    "ns",
                    Lower,
                    *n,
                );
            }
            o.push(
                s,
                "runtime",
                "task_group",
                g,
                "total",
                *run as f64,
                "ns",
                Higher,
                *n,
            );
        }
    }
    if let Some(g) = report.gang {
        for gang in &g.gangs {
            let key = gang_key(trace, gang.tgid, &gang.name);
            let kind = "gang";
            let n = gang.members.len() as u64;
            o.push(
                "gang",
                "corun_ratio",
                kind,
                &key,
                "value",
                gang.corun_ratio,
                "ratio",
                Higher,
                n,
            );
            o.push(
                "gang",
                "fragmented",
                kind,
                &key,
                "total",
                gang.fragmented_ns as f64,
                "ns",
                Lower,
                n,
            );
            o.push(
                "gang",
                "fragmented_ratio",
                kind,
                &key,
                "value",
                gang.fragmented_ratio,
                "ratio",
                Lower,
                n,
            );
        }
    }
    if let Some(l) = report.lhp {
        if let Ok(p) = &l.ple.0 {
            let s = "lhp";
            o.push(
                s,
                "ple_exits",
                "trace",
                "",
                "total",
                p.total as f64,
                "count",
                Lower,
                p.total,
            );
            o.push(
                s,
                "ple_exits",
                "trace",
                "",
                "rate",
                p.per_second,
                "per_s",
                Lower,
                p.total,
            );
            if p.total > 0 {
                let t = p.total as f64;
                o.push(
                    s,
                    "sibling_preempted",
                    "trace",
                    "",
                    "share",
                    p.sibling_preempted as f64 / t * 100.0,
                    "pct",
                    Lower,
                    p.total,
                );
                o.push(
                    s,
                    "all_running",
                    "trace",
                    "",
                    "share",
                    p.all_running as f64 / t * 100.0,
                    "pct",
                    Lower,
                    p.total,
                );
                o.push(
                    s,
                    "siblings_idle",
                    "trace",
                    "",
                    "share",
                    p.siblings_idle as f64 / t * 100.0,
                    "pct",
                    Lower,
                    p.total,
                );
            }
            for vm in &p.per_vm {
                let key = gang_key(trace, vm.tgid, &vm.name);
                o.push(
                    s,
                    "ple_exits",
                    "vm",
                    &key,
                    "rate",
                    vm.per_second,
                    "per_s",
                    Lower,
                    vm.total,
                );
            }
        }
        if let Ok(w) = &l.waker_preempted.0 {
            o.push(
                "lhp",
                "waker_preempted",
                "trace",
                "",
                "total",
                w.total_ns as f64,
                "ns",
                Lower,
                w.wakeups,
            );
        }
    }
    if let Some(i) = report.idle {
        let s = "idle";
        let n = i.seconds;
        o.push(
            s,
            "idle",
            "trace",
            "",
            "total",
            i.idle_ns as f64,
            "ns",
            Lower,
            i.cpus.len() as u64,
        );
        o.push(
            s,
            "wasted_idle",
            "trace",
            "",
            "total",
            i.wasted_idle_ns as f64,
            "ns",
            Lower,
            i.gaps.count,
        );
        let cpu_ns = i.duration_ns as f64 * i.cpus.len() as f64;
        if cpu_ns > 0.0 {
            o.push(
                s,
                "wasted_idle",
                "trace",
                "",
                "share",
                i.wasted_idle_ns as f64 / cpu_ns * 100.0,
                "pct",
                Lower,
                i.gaps.count,
            );
        }
        o.push(
            s,
            "throttled",
            "trace",
            "",
            "total",
            i.throttled_ns as f64,
            "ns",
            Lower,
            i.gaps.count,
        );
        o.push(
            s,
            "imbalance",
            "trace",
            "",
            "total",
            i.imbalance_ns as f64,
            "ns",
            Lower,
            i.gaps.count,
        );
        let p = &i.per_second_idle_pct;
        for (stat, v) in [
            ("mean", p.avg),
            ("stddev", p.stddev),
            ("min", p.min),
            ("max", p.max),
        ] {
            if let Some(v) = v {
                o.push(
                    s,
                    "idle_pct_per_second",
                    "trace",
                    "",
                    stat,
                    v,
                    "pct",
                    Lower,
                    n,
                );
            }
        }
        let w = &i.work_per_second_ns;
        for (stat, v) in [("mean", w.avg), ("stddev", w.stddev)] {
            if let Some(v) = v {
                let better = if stat == "mean" { Higher } else { Lower };
                o.push(
                    s,
                    "work_per_second",
                    "trace",
                    "",
                    stat,
                    v,
                    "ns_per_s",
                    better,
                    n,
                );
            }
        }
    }
    if let Some(t) = report.tlb {
        let s = "tlb";
        o.push(
            s,
            "shootdowns",
            "trace",
            "",
            "total",
            t.shootdowns as f64,
            "count",
            Lower,
            t.shootdowns,
        );
        o.push(
            s,
            "shootdowns",
            "trace",
            "",
            "rate",
            t.shootdowns_per_second,
            "per_s",
            Lower,
            t.shootdowns,
        );
        for c in &t.ipi_classes {
            let key = c.class.label();
            o.push(
                s,
                "requests",
                "class",
                key,
                "rate",
                c.per_second,
                "per_s",
                Lower,
                c.count,
            );
            if c.count > 0 {
                o.push(
                    s,
                    "targets",
                    "class",
                    key,
                    "mean",
                    c.targets as f64 / c.count as f64,
                    "count",
                    Lower,
                    c.count,
                );
            }
            if let Some(d) = &c.delivery {
                o.push(
                    s,
                    "delivery_latency",
                    "class",
                    key,
                    "mean",
                    d.mean_ns as f64,
                    "ns",
                    Lower,
                    d.count,
                );
                o.push(
                    s,
                    "delivery_latency",
                    "class",
                    key,
                    "max",
                    d.max_ns as f64,
                    "ns",
                    Lower,
                    d.count,
                );
            }
            if let Some(d) = &c.handler {
                o.push(
                    s,
                    "handler_latency",
                    "class",
                    key,
                    "mean",
                    d.mean_ns as f64,
                    "ns",
                    Lower,
                    d.count,
                );
            }
        }
    }
    o.0
}

/// The cross-run key of a gang or VM: its process comm when it has a tgid,
/// else its name (explicit gangs).
pub fn gang_key(trace: &Trace, tgid: Option<Tid>, name: &str) -> String {
    match tgid {
        Some(g) => comm_key(process_comm(&trace.tasks, Some(g), name)),
        None => name.to_string(),
    }
}
