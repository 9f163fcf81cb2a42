//! The `gang` section as text: one verdict per gang (busiest first), then
//! per gang its running-members histogram as a bar chart, its busiest
//! members and its longest fragmented episodes.

use crate::fmt::{self, ms};
use crate::table::write_plain;
use crate::{top_or, RenderText, TextOptions};
use schedscope_analysis::gang::{Gang, GangKind, GangReport};
use schedscope_trace::Ts;
use std::cmp::Reverse;
use std::io::{self, Write};

/// The one-line verdict. It leads with the demand co-run ratio (of the
/// time two or more members wanted a CPU, how much every member that
/// wanted one ran), the figure that answers whether the gang is
/// scheduled together; then `corun_ratio` (all alive members), then the
/// fragmented share and, on lossy traces, the loss bounds:
/// "VM 4242 (qemu): the vCPUs that wanted a CPU ran together 80% of the
/// time two or more wanted one (demand co-run); all 4 vCPUs co-ran 12% of
/// the time it ran; 61% fragmented".
pub fn verdict(g: &Gang) -> String {
    let what = if g.kind == GangKind::Vm || !g.vcpus.is_empty() {
        "vCPUs"
    } else {
        "threads"
    };
    let lost = match (
        g.fragmented_ns_min,
        g.fragmented_ns_max,
        g.corun_ratio_min,
        g.corun_ratio_max,
    ) {
        (Some(flo), Some(fhi), Some(clo), Some(chi)) => format!(
            " (given events lost on its CPUs: fragmented {}-{} ms, co-run ratio {clo:.2}-{chi:.2})",
            ms(flo),
            ms(fhi)
        ),
        _ => String::new(),
    };
    let demand = if g.demand_ns == 0 {
        format!("no two {what} wanted a CPU at once (no demand co-run)")
    } else {
        format!(
            "the {what} that wanted a CPU ran together {} of the time two or more wanted one (demand co-run)",
            fmt::ratio_pct_whole(g.demand_corun_ratio)
        )
    };
    format!(
        "{}: {demand}; all {} {} co-ran {} of the time it ran; {} fragmented{lost}",
        g.name,
        g.members.len(),
        what,
        fmt::ratio_pct_whole(g.corun_ratio),
        fmt::ratio_pct_whole(g.fragmented_ratio)
    )
}

impl RenderText for GangReport {
    /// Text: a verdict per gang, then per gang its histogram as a bar chart,
    /// its busiest members and longest fragmented episodes.
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let top = top_or(opts, 10);
        if let Some(note) = &self.note {
            writeln!(out, "  {note}")?;
        }
        let mut order: Vec<&Gang> = self.gangs.iter().collect();
        order.sort_by_key(|g| Reverse(g.any_running_ns));
        for g in order.iter().take(top) {
            writeln!(out, "  {}", verdict(g))?;
        }
        if order.len() > top {
            writeln!(out, "  ... {} more gangs (--top)", order.len() - top)?;
        }
        for g in order.iter().take(top) {
            writeln!(out)?;
            writeln!(
                out,
                "{}  (members {}, any ran {} ms, all ran {} ms, fragmented {} ms)",
                g.name,
                g.members.len(),
                ms(g.any_running_ns),
                ms(g.all_running_ns),
                ms(g.fragmented_ns)
            )?;
            let total: u64 = g.running_hist_ns.iter().sum();
            let rows: Vec<Vec<String>> = g
                .running_hist_ns
                .iter()
                .enumerate()
                .map(|(k, &ns)| {
                    let share = if total == 0 {
                        0.0
                    } else {
                        ns as f64 / total as f64
                    };
                    let bar = "#".repeat((share * 40.0).round() as usize);
                    vec![k.to_string(), ms(ns), fmt::ratio_pct(share), bar]
                })
                .collect();
            write_plain(out, "  ", &["running", "time (ms)", "share (%)", ""], &rows)?;
            let mut members: Vec<usize> = (0..g.members.len()).collect();
            members.sort_by_key(|&i| Reverse(g.member_running_ns[i]));
            let rows: Vec<Vec<String>> = members
                .iter()
                .take(top)
                .map(|&i| {
                    let best = (0..g.members.len())
                        .filter(|&j| j != i)
                        .map(|j| g.pair_corun[i][j])
                        .fold(f64::NAN, f64::max);
                    let tid = g.members[i];
                    vec![
                        match g.vcpus.get(i).copied().flatten() {
                            Some(v) => format!("{tid} (vcpu {v})"),
                            None => tid.to_string(),
                        },
                        g.member_comms.get(i).cloned().unwrap_or_default(),
                        ms(g.member_running_ns[i]),
                        if best.is_nan() {
                            "-".into()
                        } else {
                            fmt::ratio_pct(best)
                        },
                    ]
                })
                .collect();
            write_plain(
                out,
                "  ",
                &["member", "comm", "ran (ms)", "best pair co-run (%)"],
                &rows,
            )?;
            if !g.episodes.is_empty() {
                let rows: Vec<Vec<String>> = g
                    .episodes
                    .iter()
                    .take(top)
                    .map(|e| {
                        vec![Ts(e.start_ns).to_string(), ms(e.duration_ns), {
                            let mut w: Vec<String> =
                                e.waiting.iter().take(8).map(|t| t.to_string()).collect();
                            if e.waiting.len() > 8 {
                                w.push(format!("+{}", e.waiting.len() - 8));
                            }
                            w.join(",")
                        }]
                    })
                    .collect();
                write_plain(
                    out,
                    "  ",
                    &["fragmented from (s)", "for (ms)", "waiting tids"],
                    &rows,
                )?;
            }
        }
        Ok(())
    }
}
