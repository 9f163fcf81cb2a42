//! The `lhp` section as text: the pause-loop-exit headline and tables (per
//! VM, per vCPU, directed yields, exit reasons), then the waker-preempted
//! tables.

use crate::fmt::{ms, pct};
use crate::table::write_plain;
use crate::{top_or, RenderText, TextOptions};
use schedscope_analysis::lhp::{LhpReport, PleReport, PleVcpu, WakerPreemptedReport};
use std::cmp::Reverse;
use std::io::{self, Write};

impl RenderText for LhpReport {
    /// Text: PLE headline and tables, exit reasons, then the waker-preempted tables.
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let top = top_or(opts, 20);
        match &self.ple.0 {
            Err(e) => writeln!(out, "  pause-loop exits: {e}")?,
            Ok(p) => ple(p, top, out)?,
        }
        writeln!(out)?;
        match &self.waker_preempted.0 {
            Err(e) => writeln!(out, "  waker-preempted time: {e}")?,
            Ok(w) => waker_preempted(w, top, out)?,
        }
        Ok(())
    }
}

/// Pause-loop exits: headline, per VM, per vCPU, directed yields, exit
/// reasons per VM.
fn ple(p: &PleReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "  {} pause-loop exits ({:.1}/s): {}% with a sibling vCPU preempted, {}% with all siblings running, {}% with siblings idle; {} directed yields to a sibling within 50 us",
        p.total,
        p.per_second,
        pct(p.sibling_preempted, p.total),
        pct(p.all_running, p.total),
        pct(p.siblings_idle, p.total),
        p.directed_yield.to_sibling
    )?;
    ple_vms(p, top, out)?;
    ple_vcpus(p, top, out)?;
    exit_reasons(p, top, out)
}

/// PLE exits per VM.
fn ple_vms(p: &PleReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let hdr = [
        "VM",
        "vCPUs",
        "PLE exits",
        "per s",
        "sibling preempted (%)",
        "all running (%)",
        "siblings idle (%)",
        "yield to sibling",
    ];
    let rows: Vec<Vec<String>> = p
        .per_vm
        .iter()
        .take(top)
        .map(|v| {
            vec![
                v.name.clone(),
                v.vcpus.to_string(),
                v.total.to_string(),
                format!("{:.1}", v.per_second),
                pct(v.sibling_preempted, v.total),
                pct(v.all_running, v.total),
                pct(v.siblings_idle, v.total),
                v.yield_to_sibling.to_string(),
            ]
        })
        .collect();
    write_plain(out, "  ", &hdr, &rows)
}

/// PLE exits per vCPU thread (most first), then the directed yields.
fn ple_vcpus(p: &PleReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let mut vc: Vec<&PleVcpu> = p.per_vcpu.iter().collect();
    vc.sort_by_key(|v| Reverse(v.total));
    let rows: Vec<Vec<String>> = vc
        .iter()
        .take(top)
        .map(|v| {
            vec![
                v.tid.to_string(),
                v.vcpu.map(|x| x.to_string()).unwrap_or_else(|| "-".into()),
                v.tgid.map(|x| x.to_string()).unwrap_or_else(|| "-".into()),
                v.total.to_string(),
                format!("{:.1}", v.per_second),
                pct(v.sibling_preempted, v.total),
                pct(v.all_running, v.total),
                pct(v.siblings_idle, v.total),
            ]
        })
        .collect();
    writeln!(out)?;
    write_plain(
        out,
        "  ",
        &[
            "vCPU tid",
            "vcpu",
            "VM",
            "PLE exits",
            "per s",
            "sibling preempted (%)",
            "all running (%)",
            "siblings idle (%)",
        ],
        &rows,
    )?;
    writeln!(
        out,
        "  directed yield within 50 us: {} to a sibling, {} to another task, {} no switch",
        p.directed_yield.to_sibling, p.directed_yield.to_other, p.directed_yield.no_switch
    )?;
    Ok(())
}

/// Exit reasons of each VM.
fn exit_reasons(p: &PleReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    for vm in &p.exit_reasons {
        writeln!(out)?;
        writeln!(out, "  exit reasons of {} ({} exits)", vm.name, vm.total)?;
        let rows: Vec<Vec<String>> = vm
            .reasons
            .iter()
            .take(top)
            .map(|r| {
                vec![
                    r.reason.clone(),
                    r.count.to_string(),
                    format!("{:.2}", r.share * 100.0),
                    format!("{:.2}", r.time_ns as f64 / 1e3 / r.count.max(1) as f64),
                ]
            })
            .collect();
        write_plain(
            out,
            "    ",
            &["reason", "samples", "samples (%)", "avg time (us)"],
            &rows,
        )?;
    }
    Ok(())
}

/// Waker-preempted time: headline, per pair, per wakee process.
fn waker_preempted(w: &WakerPreemptedReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "  waker-preempted time: {} ms over {} wakeups (sleepers waited while their waker was runnable but off CPU)",
        ms(w.total_ns),
        w.wakeups
    )?;
    waker_pairs(w, top, out)?;
    writeln!(out)?;
    waker_processes(w, top, out)
}

/// Waker-preempted time per (waker, wakee) pair.
fn waker_pairs(w: &WakerPreemptedReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let rows: Vec<Vec<String>> = w
        .pairs
        .iter()
        .take(top)
        .map(|p| {
            vec![
                format!("{}:{}", p.waker_comm, p.waker),
                format!("{}:{}", p.wakee_comm, p.wakee),
                p.wakeups.to_string(),
                ms(p.waker_preempted_ns),
                ms(p.max_ns),
            ]
        })
        .collect();
    write_plain(
        out,
        "  ",
        &[
            "waker",
            "wakee",
            "wakeups",
            "waker preempted (ms)",
            "max (ms)",
        ],
        &rows,
    )?;
    Ok(())
}

/// Waker-preempted time per wakee process.
fn waker_processes(w: &WakerPreemptedReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let rows: Vec<Vec<String>> = w
        .processes
        .iter()
        .take(top)
        .map(|p| {
            vec![
                format!(
                    "{}:{}",
                    p.name,
                    p.tgid.map(|t| t.to_string()).unwrap_or_else(|| "-".into())
                ),
                p.wakeups.to_string(),
                ms(p.sleep_ns),
                ms(p.waker_preempted_ns),
                pct(p.waker_preempted_ns, p.sleep_ns),
            ]
        })
        .collect();
    write_plain(
        out,
        "  ",
        &[
            "process",
            "wakeups",
            "slept (ms)",
            "waker preempted (ms)",
            "share (%)",
        ],
        &rows,
    )?;
    Ok(())
}
