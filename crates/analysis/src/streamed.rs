//! The report computed from streams of the trace's events instead of its
//! event vector (docs/design.md, "The streaming pass"): the caller streams
//! the file up to three times, and each pass feeds the consumers that can
//! run then. Memory is what the consumers keep (the timeline, per-task
//! and per-CPU state, look-ahead windows), never the events.
//!
//! - Pass 1: the latency pass, the timeline's census, what idle needs
//!   before its own pass ([`idle::IdlePrep`]).
//! - Pass 2 (when a section reads the timeline): the timeline's build, and
//!   tlb's pass and the cpu-clock profile ([`tlb::TlbPass`],
//!   [`tlb::ProfilePass`]: they need the whole trace's counts, known after
//!   pass 1, and not the timeline).
//! - Pass 3 (idle, lhp): the idle pass over the timeline's replay cursor,
//!   which needs every repair the build placed before each event it reads
//!   (a repair is placed when the build reaches the event that proves it,
//!   any number of events later), and lhp's pause-loop-exit pass, which
//!   reads the VMs' threads' states from the finished timeline
//!   ([`idle::IdleStream`], [`lhp::LhpPass`]).
//!
//! The result is [`Report::compute`]'s, byte for byte (tested on every
//! fixture and on simulated lossy recordings).

use crate::error::check_input;
use crate::latency::LatencyPass;
use crate::report::{Report, Sections, TraceSummary};
use crate::section::Section;
use crate::{gang, idle, lhp, tlb, Context, Options, Timeline, TimelineCensus, TimelineStream};
use schedscope_trace::{Event, Trace};

/// What a pass feeds: the stream's start (the trace as known before its
/// events), then its events in the loaded trace's order.
pub trait Feed: Send {
    /// Before any event.
    fn start(&mut self, _meta: &Trace) {}
    /// The next events.
    fn events(&mut self, events: &[Event]);
}

/// How many passes [`Report::streamed`] makes for `sections`.
pub fn passes(sections: Sections) -> u32 {
    if sections.idle || sections.lhp {
        3
    } else if sections.need_timeline() {
        2
    } else {
        1
    }
}

/// Pass 1's consumers.
struct First {
    sections: Sections,
    latency: Option<LatencyPass>,
    census: Option<TimelineCensus>,
    idle: Option<idle::IdlePrep>,
}

impl Feed for First {
    fn start(&mut self, meta: &Trace) {
        if self.sections.latency {
            self.latency = Some(LatencyPass::new(meta.nr_cpus, meta.cpu_unknown));
        }
        if self.sections.need_timeline() {
            self.census = Some(TimelineCensus::new(meta));
        }
        if self.sections.idle {
            self.idle = Some(idle::IdlePrep::default());
        }
    }

    fn events(&mut self, events: &[Event]) {
        if let Some(p) = &mut self.latency {
            for ev in events {
                p.push(ev);
            }
        }
        if let Some(c) = &mut self.census {
            for ev in events {
                c.push(ev);
            }
        }
        if let Some(p) = &mut self.idle {
            p.push(events);
        }
    }
}

/// Pass 2: the timeline's build, tlb's pass and the profile.
struct Second<'t> {
    timeline: TimelineStream<'t>,
    tlb: Option<tlb::TlbPass<'t>>,
    profile: Option<tlb::ProfilePass<'t>>,
}

impl Feed for Second<'_> {
    fn events(&mut self, events: &[Event]) {
        self.timeline.push(events);
        if let Some(p) = &mut self.tlb {
            p.push(events);
        }
        if let Some(p) = &mut self.profile {
            p.push(events);
        }
    }
}

/// Pass 3: the idle and lhp passes.
struct Third<'t> {
    idle: Option<idle::IdleStream<'t>>,
    lhp: Option<lhp::LhpPass<'t>>,
}

impl Feed for Third<'_> {
    fn events(&mut self, events: &[Event]) {
        if let Some(s) = &mut self.idle {
            s.push(events);
        }
        if let Some(p) = &mut self.lhp {
            p.push(events);
        }
    }
}

impl Report {
    /// The report of `sections` ([`Sections::streamable`]) computed from
    /// streams of a trace's events: `stream(k, n, feed)` streams the
    /// events into `feed` for pass `k` of `n` ([`passes`]) and returns the
    /// trace without its events, or `None` when the file cannot be
    /// streamed (then so is the result: the caller loads it instead).
    /// When a later pass is refused or returns another trace than the
    /// first (the file was replaced or rewritten between passes), the
    /// result is the error `changed()` makes.
    /// Returns the trace (pass 1's), the report (what
    /// [`Report::compute`] gives of the loaded trace) and the timeline
    /// (`Timeline::default()` when no section reads it).
    pub fn streamed<E>(
        sections: Sections,
        opts: &Options,
        mut stream: impl FnMut(u32, u32, &mut dyn Feed) -> Result<Option<Trace>, E>,
        changed: impl Fn() -> E,
    ) -> Result<Option<(Trace, Report, Timeline)>, E> {
        debug_assert!(sections.streamable());
        let n = passes(sections);
        let mut first = First {
            sections,
            latency: None,
            census: None,
            idle: None,
        };
        let Some(trace) = stream(1, n, &mut first)? else {
            return Ok(None);
        };
        let no_timeline = Timeline::default();
        let free = Context {
            trace: &trace,
            timeline: &no_timeline,
            opts,
        };
        // tlb: its pass (on pass 2) when its input is there.
        let tlb_check = sections
            .tlb
            .then(|| check_input(&trace, "tlb", true).and_then(|()| tlb::TlbPass::new(&free)));
        let (mut tlb_pass, mut tlb_error) = (None, None);
        match tlb_check {
            Some(Ok(p)) => tlb_pass = Some(p),
            Some(Err(e)) => tlb_error = Some(e),
            None => {}
        }
        let (timeline, prepared, profile) = match first.census.take() {
            Some(census) => {
                let mut second = Second {
                    timeline: opts.timed("timeline census", || TimelineStream::new(&trace, census)),
                    tlb: tlb_pass.take(),
                    profile: sections.tlb.then(|| tlb::ProfilePass::new(&free)),
                };
                if !stream(2, n, &mut second)?.is_some_and(|t| same_file(&trace, &t)) {
                    return Err(changed());
                }
                let Second {
                    timeline,
                    tlb,
                    profile,
                } = second;
                (
                    opts.timed("timeline finish", || timeline.finish()),
                    tlb.map(tlb::TlbPass::finish),
                    profile.and_then(tlb::ProfilePass::finish),
                )
            }
            None => (Timeline::default(), None, None),
        };
        let ctx = Context {
            trace: &trace,
            timeline: &timeline,
            opts,
        };
        let idle_check = sections.idle.then(|| check_input(&trace, "idle", true));
        let lhp_check = sections.lhp.then(|| check_input(&trace, "lhp", true));
        let mut third = Third {
            idle: match (&idle_check, first.idle.take()) {
                (Some(Ok(())), Some(prep)) => Some(idle::IdleStream::new(&ctx, prep)),
                _ => None,
            },
            lhp: matches!(lhp_check, Some(Ok(()))).then(|| lhp::LhpPass::new(&ctx)),
        };
        // (a section whose input is missing reads no events: no pass for it)
        let live = third
            .idle
            .as_ref()
            .is_some_and(idle::IdleStream::reads_events)
            || third.lhp.as_ref().is_some_and(lhp::LhpPass::reads_events);
        if n >= 3 && live && !stream(3, n, &mut third)?.is_some_and(|t| same_file(&trace, &t)) {
            return Err(changed());
        }
        let idle = idle_check.map(|c| {
            Section(c.and_then(|()| {
                let s = third.idle.take().expect("made when checked");
                opts.timed("idle finish", || s.finish())
            }))
        });
        let lhp = lhp_check.map(|c| {
            Section(c.and_then(|()| {
                let p = third.lhp.take().expect("made when checked");
                opts.timed("lhp finish", || p.finish())
            }))
        });
        let tlb = sections.tlb.then(|| {
            Section(match (tlb_error, prepared) {
                (Some(e), _) => Err(e),
                (None, Some(p)) => opts.timed("tlb finish", || tlb::finish(&ctx, p)),
                (None, None) => {
                    unreachable!("tlb's pass rides on pass 2, made for every section but latency")
                }
            })
        });
        let latency = sections.latency.then(|| {
            let pass = first
                .latency
                .take()
                .unwrap_or_else(|| LatencyPass::new(trace.nr_cpus, trace.cpu_unknown));
            Section(check_input(&trace, "latency", false).and_then(|()| pass.finish(&trace)))
        });
        let gang = opts.timed("gang", || {
            sections.gang.then(|| {
                Section(check_input(&trace, "gang", true).and_then(|()| gang::analyze(&ctx)))
            })
        });
        let report = Report {
            trace: TraceSummary::of(&trace),
            latency,
            gang,
            lhp,
            idle,
            tlb,
            profile,
        }
        .finished(&trace, &timeline);
        drop(third);
        Ok(Some((trace, report, timeline)))
    }
}

/// Whether two passes read the same file: the same counts, span, losses
/// and tasks (a file replaced or rewritten between them would differ).
pub fn same_file(a: &Trace, b: &Trace) -> bool {
    a.event_count() == b.event_count()
        && (a.start(), a.end()) == (b.start(), b.end())
        && a.lost == b.lost
        && a.loss_marks == b.loss_marks
        && a.events_by_name == b.events_by_name
        && a.nr_cpus == b.nr_cpus
        && a.tasks.len() == b.tasks.len()
}
