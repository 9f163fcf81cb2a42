//! Statistics of the region between markers A and B, from the timeline's
//! intervals clipped to the region (definitions as in docs/design.md "Thread
//! states": latency = wakeup to switch-in; idle = tid 0 on a CPU; wasted
//! idle = idle while some task is Runnable anywhere).

use crate::data::Data;
use crate::index::Tid;
use schedscope_analysis::ThreadState;

/// One task's share of the region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskStats {
    /// Task.
    pub tid: Tid,
    /// Running time in the region (ns).
    pub cpu_ns: u64,
    /// Runnable (waiting for a CPU) time in the region (ns).
    pub wait_ns: u64,
    /// Times it was preempted (switched out still runnable) in the region.
    pub preemptions: u64,
}

/// Statistics of `[a, b)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionStats {
    /// Region start.
    pub a: u64,
    /// Region end.
    pub b: u64,
    /// Tasks that ran or waited, by CPU time (descending).
    pub tasks: Vec<TaskStats>,
    /// Wakeup-to-switch-in delays that ended in the region, sorted (ns).
    pub latencies: Vec<u64>,
    /// Preemptions in the region.
    pub preemptions: u64,
    /// CPU time delivered to tasks (ns).
    pub busy_ns: u64,
    /// Idle time summed over CPUs (ns).
    pub idle_ns: u64,
    /// Idle time while some task was Runnable (ns).
    pub wasted_idle_ns: u64,
}

impl RegionStats {
    /// Compute over `[a, b)`: a binary search per thread, then only the
    /// intervals inside the region.
    pub fn compute(data: &Data, a: u64, b: u64) -> RegionStats {
        let (a, b) = (a.min(b), a.max(b));
        let end = data.timeline.end;
        let mut st = RegionStats {
            a,
            b,
            ..RegionStats::default()
        };
        for th in &data.timeline.threads {
            let ivs = &th.intervals;
            let i0 = ivs.partition_point(|iv| iv.end_or(end).0 <= a);
            let mut ts = TaskStats {
                tid: th.tid.0,
                cpu_ns: 0,
                wait_ns: 0,
                preemptions: 0,
            };
            for iv in ivs.range(i0..ivs.len()) {
                if iv.ts.0 >= b {
                    break;
                }
                let (s, e) = (iv.ts.0, iv.end_or(end).0);
                let ov = e.min(b).saturating_sub(s.max(a));
                match iv.state {
                    ThreadState::Running => ts.cpu_ns += ov,
                    ThreadState::Runnable => {
                        ts.wait_ns += ov;
                        if iv.preempted {
                            if s >= a {
                                ts.preemptions += 1;
                            }
                        } else if iv.end.is_some_and(|x| x.0 >= a && x.0 < b) {
                            st.latencies.push(e.saturating_sub(s));
                        }
                    }
                    _ => {}
                }
            }
            if ts.cpu_ns > 0 || ts.wait_ns > 0 || ts.preemptions > 0 {
                st.preemptions += ts.preemptions;
                st.tasks.push(ts);
            }
        }
        st.tasks
            .sort_by(|x, y| y.cpu_ns.cmp(&x.cpu_ns).then(x.tid.cmp(&y.tid)));
        st.latencies.sort_unstable();
        for lane in &data.lanes.cpus {
            st.busy_ns += lane.busy_ns(a, b);
            st.idle_ns += lane.idle_ns(a, b);
        }
        st.wasted_idle_ns = data.lanes.wasted.iter().map(|w| w.covered(a, b)).sum();
        st
    }

    /// Latency percentile `p` (0..=100), nearest rank (the analyses' one
    /// definition, [`schedscope_analysis::stats::percentile_nearest_rank`]).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        schedscope_analysis::stats::percentile_nearest_rank(&self.latencies, p)
    }
}
