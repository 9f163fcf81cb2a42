//! Assembly: the chunks' line records folded, in file order, into the
//! [`Trace`]: event names and strings interned, call chains stored once,
//! the task table filled from line prefixes and event fields (through
//! [`TaskTableBuilder`]), loss markers timed, anomalies counted.
//!
//! `payload` interns the typed bodies; `finish` decodes what needs the
//! whole file (numeric prev_states) and turns the counts into warnings.

mod finish;
mod payload;

use super::body::{self, Payload};
use super::lines::{ChunkOut, LineEv};
use super::raw::raw_pairs;
use schedscope_trace::{
    Cpu, CpuMask, Event, EventData, LossMark, MaskId, NameId, StackId, TaskTableBuilder, Tid,
    Trace, Ts,
};
use std::collections::HashMap;

/// Cached facts about one printed event name.
struct NameInfo {
    id: NameId,
}

/// Folds chunk outputs, in file order, into the trace.
pub(super) struct Builder {
    trace: Trace,
    names: HashMap<String, NameInfo>,
    counts: Vec<u64>,
    masks: HashMap<CpuMask, MaskId>,
    line_base: u64,
    unparsed: (u64, u64, String),
    not_utf8: (u64, u64),
    too_many_names: (u64, u64),
    /// Per event name: (count, first line).
    bad_body: HashMap<NameId, (u64, u64)>,
    mask_unprinted: (u64, u64),
    header_cpus: u32,
    /// The task table, from line prefixes and event fields.
    tasks: TaskTableBuilder,
    /// Deduplicated call chains.
    stack_ids: HashMap<Vec<u64>, StackId>,
    /// Kernel symbols learnt from perf script frames.
    ksyms: HashMap<u64, String>,
    /// Keep untyped events' fields in `trace.raw_args`.
    pub(super) raw_fields: bool,
    /// Records that did not fit the raw-args store.
    raw_full: u64,
    /// Switches printed with a numeric prev_state: (event index, value, line).
    numeric_states: Vec<(usize, u64)>,
    /// Switch-outs with a state letter no kernel defines: (count, first line, text).
    unknown_states: (u64, u64, String),
    /// Event lines without a CPU column: (count, first line).
    no_cpu: (u64, u64),
    /// sched_switch lines in trace-cmd's plugin short form: (count, how
    /// many printed `R`, whether any printed a `+`).
    short_switches: (u64, u64, bool),
}

impl Builder {
    pub(super) fn new(trace: Trace) -> Builder {
        Builder {
            trace,
            names: HashMap::new(),
            counts: Vec::new(),
            masks: HashMap::new(),
            line_base: 0,
            unparsed: (0, 0, String::new()),
            not_utf8: (0, 0),
            too_many_names: (0, 0),
            bad_body: HashMap::new(),
            mask_unprinted: (0, 0),
            header_cpus: 0,
            tasks: TaskTableBuilder::new(),
            stack_ids: HashMap::new(),
            ksyms: HashMap::new(),
            raw_fields: false,
            raw_full: 0,
            numeric_states: Vec::new(),
            unknown_states: (0, 0, String::new()),
            no_cpu: (0, 0),
            short_switches: (0, 0, false),
        }
    }

    /// The id of a printed event name (`sched_switch` -> `sched:sched_switch`).
    fn name_id(&mut self, printed: &str) -> Option<NameId> {
        if let Some(n) = self.names.get(printed) {
            return Some(n.id);
        }
        if self.trace.event_names.len() >= u16::MAX as usize {
            return None;
        }
        let full = if printed.contains(':') {
            printed.to_string()
        } else {
            match body::system_of(printed) {
                Some(sys) => format!("{sys}:{printed}"),
                None => printed.to_string(),
            }
        };
        let id = NameId(self.trace.event_names.len() as u16);
        self.trace.event_names.push(full);
        self.counts.push(0);
        self.names.insert(printed.to_string(), NameInfo { id });
        Some(id)
    }

    /// The id of a call chain, stored once.
    fn stack_id(&mut self, frames: &[u64]) -> StackId {
        if frames.is_empty() {
            return StackId::NONE;
        }
        if let Some(&id) = self.stack_ids.get(frames) {
            return id;
        }
        let id = StackId(self.trace.stacks.len() as u32);
        self.trace.stacks.push(frames.to_vec());
        self.stack_ids.insert(frames.to_vec(), id);
        id
    }

    /// Fold one chunk's records into the trace (chunks in file order).
    pub(super) fn merge(&mut self, out: ChunkOut<'_>) {
        let base = self.line_base;
        self.learn_frames(&out);
        self.tally_lines(&out, base);
        let ChunkOut {
            events,
            loss_marks,
            frames,
            lines,
            ..
        } = out;
        self.trace.events.reserve(events.len());
        let mut marks = loss_marks.iter().peekable();
        for (j, l) in events.into_iter().enumerate() {
            // A loss line is timed by the event line before it (the next
            // one when it opens the file).
            while let Some(&&(_, cpu, lost)) = marks.peek().filter(|m| m.0 <= j) {
                let ts = self.trace.events.last().map_or(l.ts, |e| e.ts.0);
                self.trace.loss_marks.push(LossMark { ts, cpu, lost });
                marks.next();
            }
            self.push_line(l, &frames, base);
        }
        for &(_, cpu, lost) in marks {
            if let Some(ts) = self.trace.events.last().map(|e| e.ts.0) {
                self.trace.loss_marks.push(LossMark { ts, cpu, lost });
            }
        }
        self.trace.loss_marks.sort_unstable();
        self.line_base += lines;
    }

    /// The kernel symbols a chunk's frames name, and the frames before its
    /// first event, which continue the previous chunk's last event.
    fn learn_frames(&mut self, out: &ChunkOut<'_>) {
        for &(start, name) in &out.ksyms {
            self.ksyms.entry(start).or_insert_with(|| name.to_string());
        }
        if out.leading_frames.start < out.leading_frames.end {
            let lead =
                &out.frames[out.leading_frames.start as usize..out.leading_frames.end as usize];
            if let Some(last) = self.trace.events.last() {
                let mut all = self
                    .trace
                    .stack(last.stack)
                    .map(<[u64]>::to_vec)
                    .unwrap_or_default();
                all.extend_from_slice(lead);
                let id = self.stack_id(&all);
                if let Some(last) = self.trace.events.last_mut() {
                    last.stack = id;
                }
            }
        }
    }

    /// A chunk's line anomalies (first at line `base` + theirs), lost
    /// events and header CPU count.
    fn tally_lines(&mut self, out: &ChunkOut<'_>, base: u64) {
        let abs = |l: u64| base + l + 1;
        if out.unparsed.count > 0 {
            if self.unparsed.0 == 0 {
                self.unparsed.1 = abs(out.unparsed.first_line);
                self.unparsed.2 = out.unparsed.first_text.chars().take(80).collect();
            }
            self.unparsed.0 += out.unparsed.count;
        }
        if out.not_utf8.count > 0 {
            if self.not_utf8.0 == 0 {
                self.not_utf8.1 = abs(out.not_utf8.first_line);
            }
            self.not_utf8.0 += out.not_utf8.count;
        }
        self.trace.lost = self.trace.lost.saturating_add(out.lost);
        self.header_cpus = self.header_cpus.max(out.nr_cpus);
    }

    /// One event line into the trace (`frames`: its chunk's call chains,
    /// `base`: the chunk's first line).
    // (inlined: the line record moves once, as in one loop body)
    #[inline(always)]
    fn push_line(&mut self, l: LineEv<'_>, frames: &[u64], base: u64) {
        let line = base + l.line as u64 + 1;
        let Some(name) = self.name_id(l.event) else {
            if self.too_many_names.0 == 0 {
                self.too_many_names.1 = line;
            }
            self.too_many_names.0 += 1;
            return;
        };
        self.counts[name.0 as usize] += 1;
        if l.bad_body {
            let e = self.bad_body.entry(name).or_insert((0, line));
            e.0 += 1;
        }
        self.tasks.line_task(Tid(l.tid), l.comm, l.tgid.map(Tid));
        let ts = Ts(l.ts);
        let data = self.event_data(name, l.payload, l.body, ts, line);
        if l.bad_body {
            let full = self.trace.event_name(name).to_string();
            *self.trace.untyped.entry(full).or_insert(0) += 1;
        }
        let cpu = self.cpu_column(l.cpu, line);
        let stack = self.stack_id(&frames[l.frames.start as usize..l.frames.end as usize]);
        self.trace.events.push(Event {
            ts,
            cpu: Cpu(cpu),
            tid: Tid(l.tid),
            name,
            stack,
            data,
        });
    }

    /// The data of an event named `name`: its typed payload, or for an
    /// untyped one its fields when they are kept.
    #[inline(always)]
    fn event_data(
        &mut self,
        name: NameId,
        payload: Option<Payload<'_>>,
        body: &str,
        ts: Ts,
        line: u64,
    ) -> EventData {
        match payload {
            // (sched_stat_runtime's fields always: the timeline's
            // lost-event repair reads its pid and runtime)
            None if self.raw_fields
                || self.trace.event_name(name) == "sched:sched_stat_runtime" =>
            {
                match self.trace.raw_args.push(raw_pairs(body)) {
                    Ok(i) => EventData::Other(Some(i)),
                    Err(_) => {
                        self.raw_full += 1;
                        EventData::Other(None)
                    }
                }
            }
            None => EventData::Other(None),
            Some(p) => {
                if let Payload::Switch {
                    prev_state,
                    raw_state: None,
                    ..
                } = p
                {
                    if !body.starts_with("prev_comm=") {
                        let s = &mut self.short_switches;
                        s.0 += 1;
                        s.1 += u64::from(prev_state.bits == 0);
                        s.2 |= prev_state.preempted;
                    }
                }
                self.payload(p, ts, line)
            }
        }
    }

    /// The CPU column of a line; a line without one counts (CPU 0).
    fn cpu_column(&mut self, cpu: Option<u32>, line: u64) -> u32 {
        match cpu {
            Some(c) => c,
            None => {
                if self.no_cpu.0 == 0 {
                    self.no_cpu.1 = line;
                }
                self.no_cpu.0 += 1;
                0
            }
        }
    }
}
