//! The analysis tabs as rows of text, read from the report structs' fields
//! (the same structs as `schedscope report` prints), each row with the
//! time span that Enter jumps the timeline to.

use crate::index::Tid;
use crate::view::fmt_dur;
use schedscope_analysis::report::Section;
use schedscope_analysis::Report;

/// Where Enter on a row takes the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jump {
    /// What the span is, for the status line.
    pub what: String,
    /// Span start (ns, trace clock).
    pub start: u64,
    /// Span end.
    pub end: u64,
    /// CPU lane to select, when the row names one.
    pub cpu: Option<u32>,
    /// Task to select, when the row names one.
    pub tid: Option<Tid>,
}

/// One table row.
#[derive(Clone, Debug)]
pub struct Row {
    /// Cell texts, one per column.
    pub cells: Vec<String>,
    /// Jump target, when the row has a time.
    pub jump: Option<Jump>,
}

/// One analysis tab.
#[derive(Clone, Debug, Default)]
pub struct TabTable {
    /// Tab title.
    pub title: &'static str,
    /// Headline (first line above the table).
    pub headline: String,
    /// Column headers.
    pub header: Vec<&'static str>,
    /// Rows.
    pub rows: Vec<Row>,
}

/// All analysis tabs, in tab order: latency, gang, lhp, idle, tlb.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    /// The tabs.
    pub tabs: Vec<TabTable>,
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn secs_rel(ns: u64, start: u64) -> String {
    format!("{:.6}", ns.saturating_sub(start) as f64 / 1e9)
}

/// The section's value, or a headline with its error.
fn ok<'a, T>(s: &'a Option<Section<T>>, tab: &mut TabTable) -> Option<&'a T> {
    match s {
        None => {
            tab.headline = "not computed".into();
            None
        }
        Some(Section(Err(e))) => {
            tab.headline = format!("not available: {e}");
            None
        }
        Some(Section(Ok(v))) => Some(v),
    }
}

impl Tables {
    /// Rows of every tab from `report`.
    pub fn new(report: &Report) -> Tables {
        let t0 = report.trace.start_ns;
        Tables {
            tabs: vec![
                latency(report, t0),
                gang(report, t0),
                lhp(report),
                idle(report, t0),
                tlb(report),
            ],
        }
    }
}

fn latency(report: &Report, t0: u64) -> TabTable {
    let mut tab = TabTable {
        title: "Latency",
        header: vec![
            "task",
            "switches",
            "runtime ms",
            "avg delay ms",
            "max delay ms",
            "max at s",
        ],
        ..TabTable::default()
    };
    if let Some(l) = ok(&report.latency, &mut tab) {
        let worst = l.tasks.iter().map(|t| t.delay_max_ns).max().unwrap_or(0);
        tab.headline = format!(
            "{} tasks, {} switches, worst wakeup-to-run delay {} (Enter: show it)",
            l.tasks.len(),
            l.total_switches,
            fmt_dur(worst)
        );
        let mut tasks: Vec<_> = l.tasks.iter().collect();
        tasks.sort_by(|a, b| b.delay_max_ns.cmp(&a.delay_max_ns).then(a.tid.cmp(&b.tid)));
        tab.rows = tasks
            .into_iter()
            .map(|t| Row {
                cells: vec![
                    format!("{}[{}]", t.comm, t.tid),
                    t.switches.to_string(),
                    ms(t.runtime_ns),
                    ms(t.delay_avg_ns),
                    ms(t.delay_max_ns),
                    if t.delay_max_ns > 0 {
                        secs_rel(t.delay_max_at_ns, t0)
                    } else {
                        "-".into()
                    },
                ],
                jump: (t.delay_max_ns > 0).then(|| Jump {
                    what: format!("the longest wakeup delay of {}[{}]", t.comm, t.tid),
                    start: t.delay_max_start_ns,
                    end: t.delay_max_at_ns,
                    cpu: None,
                    tid: Some(t.tid),
                }),
            })
            .collect();
    }
    tab
}

fn gang(report: &Report, t0: u64) -> TabTable {
    let mut tab = TabTable {
        title: "Gang",
        header: vec![
            "gang",
            "members",
            "corun ratio",
            "fragmented ms",
            "fragmented %",
            "longest episode at s",
        ],
        ..TabTable::default()
    };
    if let Some(g) = ok(&report.gang, &mut tab) {
        tab.headline = format!(
            "{} gangs; corun ratio = time all run / time any runs (Enter: longest fragmented episode)",
            g.gangs.len()
        );
        if let Some(n) = &g.note {
            tab.headline = format!("{} — {n}", tab.headline);
        }
        tab.rows = g
            .gangs
            .iter()
            .map(|gang| {
                let ep = gang.episodes.iter().max_by_key(|e| e.duration_ns);
                Row {
                    cells: vec![
                        gang.name.clone(),
                        gang.members.len().to_string(),
                        format!("{:.3}", gang.corun_ratio),
                        ms(gang.fragmented_ns),
                        format!("{:.1}", gang.fragmented_ratio * 100.0),
                        ep.map_or("-".into(), |e| {
                            format!("{} ({})", secs_rel(e.start_ns, t0), fmt_dur(e.duration_ns))
                        }),
                    ],
                    jump: ep.map(|e| Jump {
                        what: format!("the longest fragmented episode of {}", gang.name),
                        start: e.start_ns,
                        end: e.start_ns + e.duration_ns,
                        cpu: None,
                        tid: e.waiting.first().map(|t| t.0),
                    }),
                }
            })
            .collect();
    }
    tab
}

fn lhp(report: &Report) -> TabTable {
    let mut tab = TabTable {
        title: "LHP",
        header: vec![
            "kind",
            "who",
            "count",
            "sibling preempted",
            "rate/s",
            "preempted ms",
        ],
        ..TabTable::default()
    };
    let Some(l) = ok(&report.lhp, &mut tab) else {
        return tab;
    };
    let mut head = Vec::new();
    match &l.ple.0 {
        Ok(p) => {
            head.push(format!(
                "PLE exits {} ({} with a preempted sibling)",
                p.total, p.sibling_preempted
            ));
            for vm in &p.per_vm {
                tab.rows.push(Row {
                    cells: vec![
                        "PLE VM".into(),
                        vm.name.clone(),
                        vm.total.to_string(),
                        vm.sibling_preempted.to_string(),
                        format!("{:.1}", vm.per_second),
                        "-".into(),
                    ],
                    jump: None,
                });
            }
        }
        Err(e) => head.push(format!("PLE: {e}")),
    }
    match &l.waker_preempted.0 {
        Ok(w) => {
            head.push(format!(
                "waker preempted {} over {} wakeups",
                fmt_dur(w.total_ns),
                w.wakeups
            ));
            for p in &w.pairs {
                tab.rows.push(Row {
                    cells: vec![
                        "waker>wakee".into(),
                        format!(
                            "{}[{}] > {}[{}]",
                            p.waker_comm, p.waker.0, p.wakee_comm, p.wakee.0
                        ),
                        p.wakeups.to_string(),
                        "-".into(),
                        "-".into(),
                        ms(p.waker_preempted_ns),
                    ],
                    jump: None,
                });
            }
        }
        Err(e) => head.push(format!("waker preempted: {e}")),
    }
    tab.headline = head.join("; ");
    tab
}

fn idle(report: &Report, t0: u64) -> TabTable {
    let mut tab = TabTable {
        title: "Idle",
        header: vec![
            "cpu",
            "gap at s",
            "gap ms",
            "throttled ms",
            "imbalance ms",
            "ended by",
            "waiting",
        ],
        ..TabTable::default()
    };
    if let Some(i) = ok(&report.idle, &mut tab) {
        tab.headline = format!(
            "idle {}, wasted idle {} (throttled {}, imbalance {}); longest wasted-idle gaps (Enter: show)",
            fmt_dur(i.idle_ns),
            fmt_dur(i.wasted_idle_ns),
            fmt_dur(i.throttled_ns),
            fmt_dur(i.imbalance_ns)
        );
        tab.rows = i
            .gaps
            .longest
            .iter()
            .map(|g| Row {
                cells: vec![
                    g.cpu.to_string(),
                    secs_rel(g.start_ns, t0),
                    ms(g.dur_ns),
                    ms(g.throttled_ns),
                    ms(g.imbalance_ns),
                    g.ending.clone(),
                    g.waiting
                        .iter()
                        .map(|w| format!("{}[{}]", w.comm, w.tid))
                        .collect::<Vec<_>>()
                        .join(","),
                ],
                jump: Some(Jump {
                    what: format!(
                        "the wasted-idle gap of CPU{} at {}s",
                        g.cpu,
                        secs_rel(g.start_ns, t0)
                    ),
                    start: g.start_ns,
                    end: g.start_ns + g.dur_ns,
                    cpu: Some(g.cpu),
                    tid: None,
                }),
            })
            .collect();
    }
    tab
}

fn tlb(report: &Report) -> TabTable {
    let mut tab = TabTable {
        title: "TLB",
        header: vec!["kind", "what", "class", "count", "share %"],
        ..TabTable::default()
    };
    if let Some(t) = ok(&report.tlb, &mut tab) {
        tab.headline = format!(
            "{} TLB shootdowns ({:.1}/s), source {}",
            t.shootdowns, t.shootdowns_per_second, t.source
        );
        for c in &t.top_callsites {
            tab.rows.push(Row {
                cells: vec![
                    "callsite".into(),
                    format!("{} -> {}", c.callsite, c.callback),
                    format!("{:?}", c.class),
                    c.count.to_string(),
                    format!("{:.1}", c.share * 100.0),
                ],
                jump: None,
            });
        }
        for s in &t.senders {
            tab.rows.push(Row {
                cells: vec![
                    "sender".into(),
                    format!("{}[{}]", s.comm, s.pid),
                    "-".into(),
                    s.count.to_string(),
                    format!("{:.1}", s.share * 100.0),
                ],
                jump: None,
            });
        }
    }
    if let Some(p) = &report.profile {
        for r in &p.top {
            tab.rows.push(Row {
                cells: vec![
                    "profile".into(),
                    format!("{} {}", r.symbol, r.module),
                    if r.flush { "flush".into() } else { "-".into() },
                    r.samples.to_string(),
                    format!("{:.1}", r.share * 100.0),
                ],
                jump: None,
            });
        }
    }
    tab
}
