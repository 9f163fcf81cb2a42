//! The report: one struct per analysis section, gathered for rendering.
//!
//! JSON shape (a public contract): `{trace: {...}, latency, gang, lhp, idle,
//! tlb, profile}`; only the sections asked for are present. A section that
//! could not be computed serialises as `{"error": {...}}` naming what is missing.

use crate::error::check_input;
pub use crate::section::Section;
use crate::{gang, idle, latency, lhp, tlb, AnalysisError, Context, Options, Timeline};
use schedscope_trace::{Trace, Warning};
use serde::Serialize;
use std::collections::BTreeMap;

/// Which sections to compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sections {
    /// `--latency`.
    pub latency: bool,
    /// `--gang`.
    pub gang: bool,
    /// `--lhp`.
    pub lhp: bool,
    /// `--idle`.
    pub idle: bool,
    /// `--tlb` (includes the profile when the trace has one).
    pub tlb: bool,
}

/// Events the latency pass reads (`sched_waking` when the file has no
/// `sched_wakeup`).
const LATENCY_EVENTS: [&str; 4] = [
    "sched:sched_switch",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_waking",
];
/// Events the [`Timeline`] is built from.
const TIMELINE_EVENTS: [&str; 7] = [
    "sched:sched_switch",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_waking",
    "sched:sched_migrate_task",
    // evidence for the lost-event repairs (crate::timeline::Evidence)
    "sched:sched_stat_runtime",
    "power:cpu_idle",
];
/// VM detection (gang) and PLE exits (lhp).
const KVM_EVENTS: [&str; 2] = ["kvm:kvm_exit", "kvm:kvm_entry"];
/// Besides its required events, wakeups and proxies ([`idle`]'s lists): the
/// wakeup of new tasks and the rest of the SCHED softirq events it reads.
const IDLE_MORE: [&str; 2] = ["sched:sched_wakeup_new", "irq:softirq_raise"];
/// Besides [`tlb::EVENTS`]: the IPI vectors and the cpu-clock profile
/// (any modifiers, see [`tlb::profile::is_profile_event`]).
const TLB_MORE: [&str; 5] = [
    "irq_vectors:call_function_entry",
    "irq_vectors:call_function_single_entry",
    "irq_vectors:reschedule_entry",
    "cpu-clock*",
    "task-clock*",
];

impl Sections {
    /// Whether no section is selected.
    pub fn is_empty(&self) -> bool {
        *self == Sections::default()
    }

    /// Whether a section that reads the [`Timeline`] is selected (only
    /// latency, which follows `perf sched latency`'s own rules, does its own
    /// pass over the events and never needs it).
    pub fn need_timeline(&self) -> bool {
        self.gang || self.lhp || self.idle || self.tlb
    }

    /// The event names the selected sections read (for
    /// `schedscope_parser::LoadOptions::keep`); `None` when no section is
    /// selected. Events left out are still counted, and the trace's span,
    /// CPUs and tasks still come from the whole file, so every report is the
    /// same as from a full load (tested below on every fixture); what is
    /// saved is decoding and storing the events nobody reads (on the
    /// hackbench benchmark, sched_stat_runtime is 31% of the file). The
    /// parser always keeps fork/exit/exec.
    pub fn needed_events(&self) -> Option<Vec<&'static str>> {
        if self.is_empty() {
            return None;
        }
        let mut v: Vec<&'static str> = Vec::new();
        if self.latency {
            v.extend(LATENCY_EVENTS);
        }
        if self.need_timeline() {
            v.extend(TIMELINE_EVENTS);
        }
        if self.gang || self.lhp {
            v.extend(KVM_EVENTS);
        }
        if self.idle {
            v.extend(idle::REQUIRED);
            v.extend(idle::WAKEUPS);
            v.extend(idle::PROXIES);
            v.extend(IDLE_MORE);
        }
        if self.tlb {
            v.extend(tlb::EVENTS);
            v.extend(TLB_MORE);
        }
        v.sort_unstable();
        v.dedup();
        Some(v)
    }

    /// The event names the selected sections only count (for
    /// `schedscope_parser::LoadOptions::tally`): tlb reads `tlb:tlb_flush`
    /// (up to a third of a shootdown-heavy recording) only as counts by
    /// reason, CPU and pages, from events or from tallies alike, and no
    /// other section reads it.
    pub fn tallied_events(&self) -> Vec<&'static str> {
        if self.tlb {
            vec![tlb::TALLIED]
        } else {
            Vec::new()
        }
    }

    /// Whether every selected section can be computed from streams of the
    /// events ([`Report::streamed`]): all of them (latency a push pass,
    /// the timeline built by [`crate::TimelineStream`], gang from it, idle,
    /// lhp and tlb push passes), so any selection but none.
    pub fn streamable(&self) -> bool {
        !self.is_empty()
    }

    /// Every section.
    pub fn all() -> Sections {
        Sections {
            latency: true,
            gang: true,
            lhp: true,
            idle: true,
            tlb: true,
        }
    }
}

/// The `trace` object of the JSON report.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSummary {
    /// File as given.
    pub path: String,
    /// Input format (`perf_data`, `ftrace_text`, `trace_cmd_text`, `perf_script_text`).
    pub format: schedscope_trace::TraceFormat,
    /// Number of events decoded from the file (all of them, also those a
    /// filtered load did not keep).
    pub events: u64,
    /// Events reported lost by the kernel.
    pub lost: u64,
    /// Where they were lost: per CPU named by the loss records, with the
    /// times of the first and last in-stream loss record.
    pub lost_by_cpu: Vec<schedscope_trace::CpuLoss>,
    /// Number of CPUs.
    pub cpus: u32,
    /// First event time (ns).
    pub start_ns: u64,
    /// Last event time (ns).
    pub end_ns: u64,
    /// Count per `system:event`.
    pub events_by_name: BTreeMap<String, u64>,
    /// Decoder warnings.
    pub warnings: Vec<Warning>,
    /// Host the trace was recorded on, when the file says (perf.data's
    /// hostname header). Not in the JSON: the `trace` object's keys are a
    /// contract; the text header and other views print it.
    #[serde(skip)]
    pub host: Option<String>,
    /// Some event lines had no CPU column ([`Trace::cpu_unknown`]): `cpus`
    /// counts only the CPUs named. Not in the JSON, as `host`.
    #[serde(skip)]
    pub cpu_unknown: bool,
}

impl TraceSummary {
    /// Summarise `trace`.
    pub fn of(trace: &Trace) -> TraceSummary {
        TraceSummary {
            path: trace.path.clone(),
            format: trace.format,
            events: trace.event_count(),
            lost: trace.lost,
            lost_by_cpu: trace.lost_by_cpu.clone(),
            cpus: trace.nr_cpus,
            start_ns: trace.start().0,
            end_ns: trace.end().0,
            events_by_name: trace.events_by_name.clone(),
            warnings: trace.warnings.clone(),
            host: trace.meta.hostname.clone(),
            cpu_unknown: trace.cpu_unknown,
        }
    }
}

/// Everything `schedscope report` computed.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The input.
    pub trace: TraceSummary,
    /// Scheduling latency and run time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Section<latency::LatencyReport>>,
    /// Gang co-run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<Section<gang::GangReport>>,
    /// Lock-holder preemption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lhp: Option<Section<lhp::LhpReport>>,
    /// Idle under bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<Section<idle::IdleReport>>,
    /// TLB shootdowns and IPIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlb: Option<Section<tlb::TlbReport>>,
    /// cpu-clock profile (present with `--tlb` when the trace has samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<tlb::ProfileReport>,
}

/// Run `f` when `on`, as a [`Section`].
fn maybe<T>(on: bool, f: impl FnOnce() -> Result<T, AnalysisError>) -> Option<Section<T>> {
    on.then(|| Section(f()))
}

impl Report {
    /// Compute the requested sections of `trace`.
    ///
    /// The timeline is built once (only when a section needs it), in
    /// parallel with the work that does not read it: latency (its own
    /// perf-compatible pass over the events) and the bulk of tlb (its pass
    /// and symbolization, `tlb::prepare`); then gang, lhp and idle run on
    /// the timeline in parallel, and tlb finishes on it. Results do not depend on the
    /// number of threads.
    pub fn compute(trace: &Trace, sections: Sections, opts: &Options) -> Report {
        Report::compute_with_timeline(trace, sections, opts).0
    }

    /// [`Report::compute`], also returning the [`Timeline`] the sections
    /// were computed from (empty when no section needed it, see
    /// [`Sections::need_timeline`]), for views that draw it (the TUI).
    pub fn compute_with_timeline(
        trace: &Trace,
        sections: Sections,
        opts: &Options,
    ) -> (Report, Timeline) {
        let (report, timeline, ()) = Report::compute_beside_timeline(trace, sections, opts, |_| ());
        (report, timeline)
    }

    /// [`Report::compute_with_timeline`], also running `beside` on the
    /// timeline as soon as it is built, in parallel with the sections that
    /// read it (gang, lhp, profile, idle): the TUI builds its lane index there.
    pub fn compute_beside_timeline<T: Send>(
        trace: &Trace,
        sections: Sections,
        opts: &Options,
        beside: impl FnOnce(&Timeline) -> T + Send,
    ) -> (Report, Timeline, T) {
        // Two strands, balanced by rayon's work stealing: the timeline and
        // its readers, beside the sections that need no timeline.
        let no_timeline = Timeline::default();
        let free = Context {
            trace,
            timeline: &no_timeline,
            opts,
        };
        let ((timeline, (((gang, lhp), profile), (idle, extra))), (latency, tlb_prepared)) =
            rayon::join(
                || {
                    let timeline = if sections.need_timeline() {
                        opts.timed("timeline", || Timeline::build(trace))
                    } else {
                        Timeline::default()
                    };
                    let ctx = Context {
                        trace,
                        timeline: &timeline,
                        opts,
                    };
                    let readers = rayon::join(
                        || {
                            rayon::join(
                                || {
                                    rayon::join(
                                        || {
                                            opts.timed("gang", || {
                                                maybe(sections.gang, || {
                                                    check_input(trace, "gang", true)?;
                                                    gang::analyze(&ctx)
                                                })
                                            })
                                        },
                                        || {
                                            opts.timed("lhp", || {
                                                maybe(sections.lhp, || {
                                                    check_input(trace, "lhp", true)?;
                                                    lhp::analyze(&ctx)
                                                })
                                            })
                                        },
                                    )
                                },
                                || {
                                    sections
                                        .tlb
                                        .then(|| {
                                            opts.timed("profile", || tlb::analyze_profile(&ctx))
                                        })
                                        .flatten()
                                },
                            )
                        },
                        || {
                            rayon::join(
                                || {
                                    opts.timed("idle", || {
                                        maybe(sections.idle, || {
                                            check_input(trace, "idle", true)?;
                                            idle::analyze(&ctx)
                                        })
                                    })
                                },
                                || beside(&timeline),
                            )
                        },
                    );
                    (timeline, readers)
                },
                || {
                    rayon::join(
                        || {
                            opts.timed("latency", || {
                                maybe(sections.latency, || {
                                    check_input(trace, "latency", false)?;
                                    if sections.need_timeline() {
                                        latency::compute(trace)
                                    } else {
                                        // alone: the other cores are idle
                                        latency::compute_in_parts(
                                            trace,
                                            rayon::current_num_threads(),
                                        )
                                    }
                                })
                            })
                        },
                        || {
                            sections.tlb.then(|| {
                                opts.timed("tlb prepare", || {
                                    check_input(trace, "tlb", true)?;
                                    tlb::prepare(&free)
                                })
                            })
                        },
                    )
                },
            );
        let tlb = tlb_prepared.map(|p| {
            let ctx = Context {
                trace,
                timeline: &timeline,
                opts,
            };
            Section(p.and_then(|p| opts.timed("tlb finish", || tlb::finish(&ctx, p))))
        });
        let report = Report {
            trace: TraceSummary::of(trace),
            latency,
            gang,
            lhp,
            idle,
            tlb,
            profile,
        }
        .finished(trace, &timeline);
        (report, timeline, extra)
    }

    /// The last step of every way of computing a report (loaded,
    /// [`Report::compute_beside_timeline`], or streamed,
    /// [`Report::streamed`]): latency's loss bounds from the timeline when
    /// one was built, and the missing-events notes.
    pub(crate) fn finished(mut self, trace: &Trace, timeline: &Timeline) -> Report {
        if let Some(Section(Ok(l))) = &mut self.latency {
            if timeline.is_built() {
                l.add_loss_bounds(trace, timeline);
            }
        }
        self.note_recorded(trace);
        self
    }

    /// Let the sections' missing-events errors say which of the events the
    /// recording enabled but has no samples of
    /// ([`AnalysisError::note_recorded`]).
    fn note_recorded(&mut self, trace: &Trace) {
        fn note<T>(s: &mut Option<Section<T>>, trace: &Trace) {
            if let Some(Section(Err(e))) = s {
                e.note_recorded(trace);
            }
        }
        note(&mut self.latency, trace);
        note(&mut self.gang, trace);
        note(&mut self.lhp, trace);
        note(&mut self.idle, trace);
        note(&mut self.tlb, trace);
    }

    /// Errors of the sections that failed, in report order.
    pub fn errors(&self) -> Vec<&AnalysisError> {
        fn err<T>(s: &Option<Section<T>>) -> Option<&AnalysisError> {
            s.as_ref().and_then(|s| s.0.as_ref().err())
        }
        [
            err(&self.latency),
            err(&self.gang),
            err(&self.lhp),
            err(&self.idle),
            err(&self.tlb),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Number of sections present (computed or failed).
    pub fn requested(&self) -> usize {
        [
            self.latency.is_some(),
            self.gang.is_some(),
            self.lhp.is_some(),
            self.idle.is_some(),
            self.tlb.is_some(),
        ]
        .iter()
        .filter(|&&b| b)
        .count()
    }

    /// Whether every requested section failed (the CLI then exits 1).
    pub fn all_failed(&self) -> bool {
        self.requested() > 0 && self.errors().len() == self.requested()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> Trace {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sim")
            .join(name);
        schedscope_parser::load(&p).unwrap()
    }

    fn json_with_threads(trace: &Trace, threads: usize, sections: Sections) -> String {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let opts = Options {
            top: 10,
            ..Default::default()
        };
        pool.install(|| serde_json::to_string(&Report::compute(trace, sections, &opts)).unwrap())
    }

    /// Every section, alone and all together, computed from a load that
    /// keeps only `needed_events()` gives the same JSON (counts, span, CPUs,
    /// tasks, every figure) as from the whole file, on every perf.data
    /// fixture (real recordings plain and zstd, with callchains, the idle
    /// scenarios, the simulator's VMs).
    #[test]
    fn every_section_from_its_needed_events_only_equals_the_full_trace() {
        assert_eq!(Sections::default().needed_events(), None);
        let one = |f: fn(&mut Sections)| {
            let mut s = Sections::default();
            f(&mut s);
            s
        };
        let sections = [
            one(|s| s.latency = true),
            one(|s| s.gang = true),
            one(|s| s.lhp = true),
            one(|s| s.idle = true),
            one(|s| s.tlb = true),
            Sections::all(),
        ];
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut dropped_some = false;
        for f in [
            "perf/sched_small.data",
            "perf/sched_small_zstd.data",
            "perf/callchain.data",
            "idle/capped.data",
            "idle/hackbench.data",
            "sim/mixed-s1.data",
            "sim/bare-metal-s1.data",
        ] {
            let p = root.join(f);
            let full = schedscope_parser::load(&p).unwrap();
            for s in sections {
                let keep = s
                    .needed_events()
                    .map(|n| n.iter().map(|s| s.to_string()).collect());
                // (the timeline sections on the decoder's spare memory, and
                // what they only count tallied)
                let opts = schedscope_parser::LoadOptions {
                    keep,
                    spare: s.need_timeline(),
                    tally: s.tallied_events().iter().map(|n| n.to_string()).collect(),
                    raw_fields: false,
                };
                let part = schedscope_parser::load_with(&p, &opts).unwrap();
                dropped_some |= part.events.len() < full.events.len();
                let a = json_with_threads(&full, 2, s);
                assert_eq!(json_with_threads(&part, 2, s), a, "{f}: {s:?}");
            }
        }
        assert!(dropped_some, "no fixture had an event to drop");
    }

    #[test]
    fn serial_and_parallel_runs_are_identical() {
        let trace = fixture("mixed-s1.data");
        let one = json_with_threads(&trace, 1, Sections::all());
        let four = json_with_threads(&trace, 4, Sections::all());
        assert_eq!(one, four);
        let v: serde_json::Value = serde_json::from_str(&one).unwrap();
        for k in ["trace", "latency", "gang", "lhp", "idle", "tlb"] {
            assert!(v.get(k).is_some(), "{k} missing");
        }
    }

    #[test]
    fn latency_alone_skips_the_timeline_and_failures_are_counted() {
        let trace = fixture("bare-metal-s1.data");
        let opts = Options::default();
        let (r, timeline) = Report::compute_with_timeline(
            &trace,
            Sections {
                latency: true,
                ..Default::default()
            },
            &opts,
        );
        assert!(
            timeline.threads.is_empty(),
            "timeline built for latency alone"
        );
        assert_eq!(
            (r.requested(), r.errors().len(), r.all_failed()),
            (1, 0, false)
        );
        // The bare-metal fixture has no IPI/TLB events: tlb alone fails.
        let (r, timeline) = Report::compute_with_timeline(
            &trace,
            Sections {
                tlb: true,
                ..Default::default()
            },
            &opts,
        );
        assert!(!timeline.threads.is_empty());
        assert_eq!(
            (r.requested(), r.errors().len(), r.all_failed()),
            (1, 1, true)
        );
        let e = r.errors()[0].to_string();
        assert!(e.contains("the trace has no"), "{e}");
    }
}
