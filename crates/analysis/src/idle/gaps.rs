//! Wasted-idle accounting: the global mode (what kind of work is stuck),
//! accrual of each idle CPU's time into it, and the wasted-idle gaps (open
//! per idle CPU while some work is stuck; how each ended; the histogram and
//! the longest ones).

use super::pass::Pass;
use super::{Gap, Waiter};
use crate::stats::log2_bucket as gap_bucket;
use schedscope_trace::Tid;

/// What kind of work is stuck somewhere, for every idle CPU at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// None.
    None,
    /// Only throttled tasks.
    Throttled,
    /// Some unthrottled task queued on a busy CPU.
    Imbalance,
}

/// A wasted-idle gap still open on a CPU.
#[derive(Clone, Debug)]
pub(super) struct OpenGap {
    start: u64,
    thr: u64,
    imb: u64,
    /// A task was pulled into the CPU during the gap.
    pub(super) pulled: bool,
    waiting: Vec<(Tid, u32, bool)>,
}

/// How a gap ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ending {
    Wakeup,
    Pull,
    RanElsewhere,
    TraceEnd,
    Unthrottle,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Wakeup => "wakeup",
            Ending::Pull => "pull",
            Ending::RanElsewhere => "ran_elsewhere",
            Ending::TraceEnd => "trace_end",
            Ending::Unthrottle => "unthrottle",
        }
    }
}

/// Gaps kept in [`super::Gaps::longest`].
const LONGEST: usize = 20;

impl Pass<'_> {
    fn compute_mode(&self) -> Mode {
        if self.n_busyq > 0 {
            Mode::Imbalance
        } else if self.n_thr > 0 {
            Mode::Throttled
        } else {
            Mode::None
        }
    }

    /// Accrue the idle CPU `c`'s time since its last accrual into the current mode.
    pub(super) fn accrue(&mut self, c: usize, ts: u64) {
        let mode = self.mode;
        let s = &mut self.cpus[c];
        let dur = ts.saturating_sub(s.seg_start);
        s.seg_start = ts;
        if dur == 0 {
            return;
        }
        match mode {
            Mode::None => {}
            Mode::Throttled => {
                s.out.throttled_ns += dur;
                s.out.wasted_idle_ns += dur;
                if let Some(g) = s.gap.as_mut() {
                    g.thr += dur;
                }
            }
            Mode::Imbalance => {
                s.out.imbalance_ns += dur;
                s.out.wasted_idle_ns += dur;
                if let Some(g) = s.gap.as_mut() {
                    g.imb += dur;
                }
            }
        }
    }

    pub(super) fn open_gap(&mut self, c: usize, ts: u64) {
        let mut waiting = Vec::new();
        for &tid in self.waiting.iter().take(64) {
            if let Some(w) = self.tasks.get(&tid).and_then(|t| t.wait) {
                if w.throttled || !self.idle(w.cpu) {
                    waiting.push((tid, w.cpu, w.throttled));
                    if waiting.len() == 4 {
                        break;
                    }
                }
            }
        }
        self.cpus[c].gap = Some(OpenGap {
            start: ts,
            thr: 0,
            imb: 0,
            pulled: false,
            waiting,
        });
    }

    pub(super) fn close_gap(&mut self, c: usize, ts: u64, ending: Ending) {
        let Some(g) = self.cpus[c].gap.take() else {
            return;
        };
        let dur = ts.saturating_sub(g.start);
        if dur == 0 {
            return;
        }
        let ending = if g.pulled && ending != Ending::TraceEnd {
            Ending::Pull
        } else {
            ending
        };
        self.gap_count += 1;
        self.gap_total += dur;
        let b = gap_bucket(dur);
        if self.hist.len() <= b {
            self.hist.resize(b + 1, (0, 0));
        }
        self.hist[b].0 += 1;
        self.hist[b].1 += dur;
        match ending {
            Ending::Wakeup => self.endings.wakeup += 1,
            Ending::Pull => self.endings.pull += 1,
            Ending::RanElsewhere => self.endings.ran_elsewhere += 1,
            Ending::TraceEnd => self.endings.trace_end += 1,
            Ending::Unthrottle => self.endings.unthrottle += 1,
        }
        let keep_all = self.all_gaps.is_some();
        let min_kept = if self.longest.len() >= LONGEST && !keep_all {
            self.longest.iter().map(|g| g.dur_ns).min().unwrap_or(0)
        } else {
            0
        };
        if dur > min_kept || self.longest.len() < LONGEST {
            let gap = Gap {
                cpu: c as u32,
                start_ns: g.start,
                dur_ns: dur,
                throttled_ns: g.thr,
                imbalance_ns: g.imb,
                ending: ending.as_str().to_string(),
                waiting: g
                    .waiting
                    .iter()
                    .map(|&(tid, cpu, throttled)| Waiter {
                        tid: tid.0,
                        comm: String::new(),
                        cpu,
                        throttled,
                    })
                    .collect(),
            };
            if let Some(all) = &mut self.all_gaps {
                all.push(gap.clone());
            }
            self.longest.push(gap);
            if self.longest.len() > 2 * LONGEST {
                self.trim_longest();
            }
        }
    }

    pub(super) fn trim_longest(&mut self) {
        self.longest.sort_by(|a, b| {
            b.dur_ns
                .cmp(&a.dur_ns)
                .then(a.start_ns.cmp(&b.start_ns))
                .then(a.cpu.cmp(&b.cpu))
        });
        self.longest.truncate(LONGEST);
    }

    /// After the counters changed at `ts`: if the mode changed, accrue every
    /// idle CPU under the old mode and open or close its gap.
    pub(super) fn sync(&mut self, ts: u64) {
        let new = self.compute_mode();
        if new == self.mode {
            return;
        }
        let old = self.mode;
        for c in 0..self.cpus.len() {
            if !self.idle(c as u32) {
                continue;
            }
            self.accrue(c, ts);
            if old == Mode::None {
                self.open_gap(c, ts);
            } else if new == Mode::None {
                self.close_gap(c, ts, Ending::RanElsewhere);
            }
        }
        self.mode = new;
    }
}
