//! The analysis tabs as rows of text, read from the report structs' fields
//! (the same structs as `schedscope report` prints), each row with the
//! time span that Enter jumps the timeline to, or what to search for on
//! Enter ([`crate::jumps::Find`]: waker pairs, IPI callsites, profile
//! symbols).

use crate::jumps::Find;
pub use crate::jumps::Jump;
use crate::overlay::{Bursts, BURST_NS};
use schedscope_analysis::report::Section;
use schedscope_analysis::Report;
use schedscope_render::fmt;
use schedscope_render::{RenderText, TextOptions};
use schedscope_trace::Ts;

/// One table row.
#[derive(Clone, Debug)]
pub struct Row {
    /// Cell texts, one per column.
    pub cells: Vec<String>,
    /// Jump target, when the row has a time.
    pub jump: Option<Jump>,
    /// Jump target to search for on Enter, when `jump` is None.
    pub find: Option<Find>,
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

/// The first line of a section's text view (`schedscope report`'s
/// headline for it), trimmed.
fn text_headline(section: &dyn RenderText) -> Option<String> {
    let mut out = Vec::new();
    section
        .render_text(&TextOptions::default(), &mut out)
        .ok()?;
    String::from_utf8_lossy(&out)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
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
    /// Rows of every tab from `report`; the lhp and tlb rows jump to the
    /// densest [`BURST_NS`] of their process's events in `bursts`.
    pub fn new(report: &Report, bursts: &Bursts) -> Tables {
        Tables {
            tabs: vec![
                latency(report),
                gang(report),
                lhp(report, bursts),
                idle(report),
                tlb(report, bursts),
            ],
        }
    }
}

fn latency(report: &Report) -> TabTable {
    // columns and formats as `schedscope report --latency`
    let mut tab = TabTable {
        title: "Latency",
        header: schedscope_render::latency::TASK_COLUMNS
            .iter()
            .map(|&(name, _)| name)
            .collect(),
        ..TabTable::default()
    };
    if let Some(l) = ok(&report.latency, &mut tab) {
        tab.headline = format!(
            "{} (Enter: show it)",
            text_headline(l).unwrap_or_else(|| format!("{} tasks", l.tasks.len()))
        );
        // (the report lists tasks by max delay, then tid, as the text does)
        tab.rows = l
            .tasks
            .iter()
            .map(|t| Row {
                cells: schedscope_render::latency::task_cells(t),
                find: None,
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

fn gang(report: &Report) -> TabTable {
    // figures as `schedscope report --gang` prints them (its verdict line,
    // led by the demand co-run, and episode table)
    let mut tab = TabTable {
        title: "Gang",
        header: vec![
            "gang",
            "members",
            "demand co-ran",
            "co-ran",
            "fragmented ms",
            "fragmented",
            "longest episode at s",
            "length ms",
        ],
        ..TabTable::default()
    };
    if let Some(g) = ok(&report.gang, &mut tab) {
        tab.headline = format!(
            "{} gangs; demand co-ran: those wanting a CPU all ran, of the time 2+ wanted one; co-ran: all ran / any ran (Enter: longest fragmented episode)",
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
                        // as the verdict: none when no two members
                        // wanted a CPU at once
                        if gang.demand_ns == 0 {
                            "-".into()
                        } else {
                            fmt::ratio_pct_whole(gang.demand_corun_ratio)
                        },
                        fmt::ratio_pct_whole(gang.corun_ratio),
                        fmt::ms(gang.fragmented_ns),
                        fmt::ratio_pct_whole(gang.fragmented_ratio),
                        ep.map_or("-".into(), |e| Ts(e.start_ns).to_string()),
                        ep.map_or("-".into(), |e| fmt::ms(e.duration_ns)),
                    ],
                    find: None,
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

/// The jump to the densest burst of `times`, named `what`.
fn burst_jump(times: Option<&Vec<u64>>, what: &str) -> Option<Jump> {
    crate::jumps::densest_jump(times?, BURST_NS, what).ok()
}

fn lhp(report: &Report, bursts: &Bursts) -> TabTable {
    let mut tab = TabTable {
        title: "LHP",
        header: vec![
            "kind",
            "who",
            "count",
            "sibling preempted",
            "per s",
            "waker preempted ms",
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
                p.total,
                fmt::pct_sign(p.sibling_preempted, p.total)
            ));
            for vm in &p.per_vm {
                tab.rows.push(Row {
                    cells: vec![
                        "PLE VM".into(),
                        vm.name.clone(),
                        vm.total.to_string(),
                        fmt::pct_sign(vm.sibling_preempted, vm.total),
                        format!("{:.1}", vm.per_second),
                        "-".into(),
                    ],
                    find: None,
                    jump: vm.tgid.and_then(|t| {
                        burst_jump(bursts.ple.get(&t.0), &format!("PLE exits of {}", vm.name))
                    }),
                });
            }
        }
        Err(e) => head.push(format!("PLE: {e}")),
    }
    match &l.waker_preempted.0 {
        Ok(w) => {
            head.push(format!(
                "waker-preempted time {} ms over {} wakeups",
                fmt::ms(w.total_ns),
                w.wakeups
            ));
            for p in &w.pairs {
                tab.rows.push(Row {
                    cells: vec![
                        "waker>wakee".into(),
                        // tids first: a narrow screen cuts the end
                        format!("{}>{} {}>{}", p.waker, p.wakee, p.waker_comm, p.wakee_comm),
                        p.wakeups.to_string(),
                        "-".into(),
                        "-".into(),
                        fmt::ms(p.waker_preempted_ns),
                    ],
                    find: Some(Find::WakerPair {
                        waker: p.waker.0,
                        wakee: p.wakee.0,
                    }),
                    jump: None,
                });
            }
        }
        Err(e) => head.push(format!("waker preempted: {e}")),
    }
    tab.headline = head.join("; ");
    tab
}

fn idle(report: &Report) -> TabTable {
    // the "Longest wasted-idle gaps" table of `schedscope report --idle`
    // (plus the imbalance part of each gap)
    let mut tab = TabTable {
        title: "Idle",
        header: vec![
            "CPU",
            "start (s)",
            "length ms",
            "throttled ms",
            "imbalance ms",
            "ending",
            "waiting (tid comm @cpu)",
        ],
        ..TabTable::default()
    };
    if let Some(i) = ok(&report.idle, &mut tab) {
        tab.headline = format!(
            "idle {} ms, wasted idle {} ms (throttled {} ms, imbalance {} ms); longest wasted-idle gaps (Enter: show)",
            fmt::ms(i.idle_ns),
            fmt::ms(i.wasted_idle_ns),
            fmt::ms(i.throttled_ns),
            fmt::ms(i.imbalance_ns)
        );
        tab.rows = i
            .gaps
            .longest
            .iter()
            .map(|g| {
                let start = format!("{:.6}", g.start_ns as f64 / 1e9);
                Row {
                    cells: vec![
                        g.cpu.to_string(),
                        start.clone(),
                        fmt::ms(g.dur_ns),
                        fmt::ms(g.throttled_ns),
                        fmt::ms(g.imbalance_ns),
                        g.ending.clone(),
                        schedscope_render::idle::gap_waiting(g),
                    ],
                    find: None,
                    jump: Some(Jump {
                        what: format!("the wasted-idle gap of CPU{} at {start} s", g.cpu),
                        start: g.start_ns,
                        end: g.start_ns + g.dur_ns,
                        cpu: Some(g.cpu),
                        tid: None,
                    }),
                }
            })
            .collect();
    }
    tab
}

fn tlb(report: &Report, bursts: &Bursts) -> TabTable {
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
                    fmt::ratio_pct(c.share),
                ],
                find: Some(Find::Callsite {
                    callsite: c.callsite.clone(),
                    callback: c.callback.clone(),
                }),
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
                    fmt::ratio_pct(s.share),
                ],
                find: None,
                jump: burst_jump(
                    bursts.shootdowns.get(&s.pid),
                    &format!("TLB shootdowns sent by {}[{}]", s.comm, s.pid),
                ),
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
                    fmt::ratio_pct(r.share),
                ],
                find: Some(Find::Symbol {
                    symbol: r.symbol.clone(),
                    module: r.module.clone(),
                }),
                jump: None,
            });
        }
    }
    tab
}
