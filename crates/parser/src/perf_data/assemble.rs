//! Assembling the decoded chunks into the trace: global ids for their
//! chunk-local strings, masks and stacks, the time-ordered merge of their
//! events, their counts, tallies and anomalies (reported as warnings), and
//! the task table.

use super::chunk::{self, Anomaly, TaskOp};
use super::hash::FxMap;
use super::tracepoint;
use super::{order, tracing_data, Decoded, Timing};
use schedscope_trace::{
    CpuMask, Event, EventData, MaskId, Severity, StackId, StrId, TaskTableBuilder, Tid, Trace, Ts,
};
use std::mem::MaybeUninit;

fn anomaly_warn(
    trace: &mut Trace,
    a: &Anomaly,
    sev: Severity,
    damage: &mut Option<(u64, String)>,
    msg: impl Fn(&Anomaly) -> String,
) {
    if a.count > 0 {
        let m = msg(a);
        if sev == Severity::Error {
            damage.get_or_insert((a.first_offset, m.clone()));
        }
        trace.warn(sev, m, a.count);
    }
}

/// Warn about the anomalies the chunks counted (of the file's record
/// stream and of the decompressed one); `cpu_count`: the CPU count the
/// file records, if any.
fn warn_anomalies(
    trace: &mut Trace,
    anomalies: [[Anomaly; 9]; 2],
    damage: &mut Option<(u64, String)>,
    cpu_count: Option<u32>,
) {
    for (dec, a) in [false, true].into_iter().zip(anomalies) {
        let w = if dec {
            " of the decompressed record stream"
        } else {
            ""
        };
        anomaly_warn(trace, &a[0], Severity::Error, damage, |a| {
            format!("{} samples carry a sample id that no attr owns (first: id {} at byte offset {}{w}); skipped", a.count, a.value, a.first_offset)
        });
        anomaly_warn(trace, &a[1], Severity::Error, damage, |a| {
            format!("{} tracepoint samples have a common_type with no format in the file's tracing data (first: type {} at byte offset {}{w}); skipped", a.count, a.value as i64, a.first_offset)
        });
        anomaly_warn(trace, &a[2], Severity::DataLoss, damage, |a| {
            format!(
                "{} tracepoint samples carry no RAW payload (first at byte offset {}{w}); skipped",
                a.count, a.first_offset
            )
        });
        anomaly_warn(trace, &a[3], Severity::Error, damage, |a| {
            format!("{} samples are shorter than their attr's sample_type demands (first at byte offset {}{w}); skipped", a.count, a.first_offset)
        });
        anomaly_warn(trace, &a[4], Severity::Error, damage, |a| {
            format!("{} tracepoint payloads are shorter than their format or name a CPU >= 65536 (first at byte offset {}{w}); skipped", a.count, a.first_offset)
        });
        anomaly_warn(trace, &a[5], Severity::Info, damage, |a| {
            format!(
                "{} records of unknown type (first: type {} at byte offset {}{w}); skipped",
                a.count, a.value, a.first_offset
            )
        });
        anomaly_warn(trace, &a[6], Severity::DataLoss, damage, |a| {
            format!("{} COMM/FORK/EXIT/LOST/MMAP records are too short (first at byte offset {}{w}); skipped", a.count, a.first_offset)
        });
        anomaly_warn(trace, &a[7], Severity::Error, damage, |a| {
            let limit = match cpu_count {
                Some(n) => format!("the file records {n} CPUs"),
                None => format!(
                    "the file records no CPU count; the limit is {}",
                    tracepoint::MAX_CPUS
                ),
            };
            format!("{} samples name a CPU that does not exist (first: CPU {} at byte offset {}{w}; {limit}); skipped", a.count, a.value, a.first_offset)
        });
        anomaly_warn(trace, &a[8], Severity::Error, damage, |a| {
            format!("{} samples have a time implausible next to their neighbours in the record stream (more than twice or less than half of theirs, give or take a minute; first: {} ns at byte offset {}{w}); skipped", a.count, a.value, a.first_offset)
        });
    }
}

/// Merge chunk outputs into `trace`, in phases: give the chunk-local
/// strings, masks and stacks global ids; put the events of `slots` in time
/// order, renumbering their ids; gather the chunks' other facts (counts,
/// tallies, task records, anomalies) and report them; build the task table.
pub(super) fn merge(
    trace: &mut Trace,
    mut outs: Vec<Decoded<'_>>,
    slots: &[MaybeUninit<Event>],
    td: &tracing_data::TracingData,
    damage: &mut Option<(u64, String)>,
    timing: &Timing,
    how: MergeHow,
) {
    let maps = global_ids(trace, &mut outs);
    merge_events(trace, &mut outs, &maps, slots, how.spare);
    timing.mark("merge");
    let mut f = ChunkFacts::new(trace);
    for (d, map) in outs.into_iter().zip(maps) {
        f.add(trace, d.out, &map, d.decompressed);
    }
    let events = std::mem::take(&mut trace.events);
    conclude(trace, f, td, damage, how.cpu_count, &events);
    trace.events = events;
}

/// The end of [`merge`], once every chunk's facts are in `f`: warn about
/// the anomalies, add up the losses, tallies and counts, and build the task
/// table (`events`: the trace's events in time order, of which it reads
/// only the fork and exit events).
pub(super) fn conclude(
    trace: &mut Trace,
    f: ChunkFacts,
    td: &tracing_data::TracingData,
    damage: &mut Option<(u64, String)>,
    cpu_count: Option<u32>,
    events: &[Event],
) {
    warn_anomalies(trace, f.anomalies, damage, cpu_count);
    let ChunkFacts {
        counts,
        ops,
        tallies,
        comm_by_tid,
        tgid_by_tid,
        saw_fork,
        saw_exit,
        lost_records,
        lost_samples,
        mut lost_by_cpu,
        mut loss_marks,
        lost_samples_list,
        mut id_cpu,
        ..
    } = f;
    // A LOST_SAMPLES names its CPU through the ID_INDEX (perf) or its own
    // filled-in trailer (schedscope); otherwise it counts as CPU unknown.
    id_cpu.sort_unstable();
    for l in &lost_samples_list {
        let by_index = l.id.and_then(|id| {
            let k = id_cpu.partition_point(|&(i, _)| i < id);
            id_cpu.get(k).filter(|&&(i, _)| i == id).map(|&(_, c)| c)
        });
        let mut one = schedscope_trace::CpuLoss {
            cpu: by_index.or(l.cpu),
            ..Default::default()
        };
        one.add(l.n, false, None);
        schedscope_trace::CpuLoss::merge_into(&mut lost_by_cpu, &one);
    }
    trace.lost_by_cpu = lost_by_cpu;
    loss_marks.sort_unstable();
    trace.loss_marks = loss_marks;
    trace.tallies = tallies.list;
    // perf 6.x writes the kernel's PERF_RECORD_LOST records and, at the end,
    // LOST_SAMPLES records synthesized from the counters' read_format LOST
    // totals: both count the same dropped samples, so summing them would
    // double the loss. The larger of the two is the loss.
    trace.lost = lost_records.max(lost_samples);
    if trace.lost > 0 {
        trace.warn(
            Severity::DataLoss,
            format!(
                "the kernel lost {} events (PERF_RECORD_LOST / LOST_SAMPLES): increase the buffer size (-m)",
                trace.lost
            ),
            trace.lost,
        );
    }
    for (i, c) in counts.iter().enumerate() {
        if *c > 0 {
            trace
                .events_by_name
                .insert(trace.event_names[i].clone(), *c);
        }
    }

    build_tasks(
        trace,
        TaskFacts {
            ops,
            comm_by_tid,
            tgid_by_tid,
            saw_fork,
            saw_exit,
        },
        td,
        events,
    );
}

/// How [`merge`] is to proceed.
#[derive(Clone, Copy)]
pub(super) struct MergeHow {
    /// The slots are left as a spare: do not give their pages back.
    pub(super) spare: bool,
    /// The CPU count the file records (for messages).
    pub(super) cpu_count: Option<u32>,
}

/// One chunk's string, mask and stack ids in the trace.
pub(super) type IdMap = (Vec<StrId>, Vec<MaskId>, Vec<StackId>);

/// Per chunk: its string, mask and stack ids in the trace.
type IdMaps = Vec<IdMap>;

/// The masks and stacks given trace ids so far (see [`chunk_ids`]).
#[derive(Default)]
pub(super) struct IdState {
    mask_ids: FxMap<Vec<u64>, u32>,
    stack_ids: FxMap<Vec<u64>, u32>,
}

/// Give the chunk-local strings, masks and stacks their trace ids
/// (sequential: the tables are small); the events are renumbered as they
/// are merged.
fn global_ids(trace: &mut Trace, outs: &mut [Decoded<'_>]) -> IdMaps {
    let mut st = IdState::default();
    outs.iter_mut()
        .map(|d| chunk_ids(trace, &mut d.out, &mut st))
        .collect()
}

/// [`global_ids`] of one chunk, the chunks taken in file order.
pub(super) fn chunk_ids(
    trace: &mut Trace,
    out: &mut chunk::ChunkOut<'_>,
    st: &mut IdState,
) -> IdMap {
    let smap: Vec<StrId> = out
        .local
        .strings
        .iter()
        .map(|s| match std::str::from_utf8(s) {
            Ok(s) => trace.strings.intern(s),
            Err(_) => trace.strings.intern(&String::from_utf8_lossy(s)),
        })
        .collect();
    let mmap: Vec<MaskId> = std::mem::take(&mut out.local.masks)
        .into_iter()
        .map(|m| {
            let next = trace.cpumasks.len() as u32;
            let id = *st.mask_ids.entry(m.clone()).or_insert(next);
            if id == next {
                trace.cpumasks.push(CpuMask { words: m });
            }
            MaskId(id)
        })
        .collect();
    let kmap: Vec<StackId> = std::mem::take(&mut out.local.stacks)
        .into_iter()
        .map(|st_| {
            let next = trace.stacks.len() as u32;
            let id = *st.stack_ids.entry(st_.clone()).or_insert(next);
            if id == next {
                trace.stacks.push(st_);
            }
            StackId(id)
        })
        .collect();
    (smap, mmap, kmap)
}

/// Renumber a chunk's event with the chunk's ids (`map`) and the base of
/// its raw-field records in the trace (`raw_base`).
#[inline]
pub(super) fn fix_event(map: &IdMap, raw_base: Option<u32>, ev: &mut Event) {
    let (smap, mmap, kmap) = map;
    if ev.stack.is_some() {
        ev.stack = kmap
            .get(ev.stack.0 as usize)
            .copied()
            .unwrap_or(StackId::NONE);
    }
    remap_local(&mut ev.data, smap, mmap);
    if let EventData::Other(Some(r)) = &mut ev.data {
        match raw_base {
            Some(base) => *r += base,
            None => ev.data = EventData::Other(None),
        }
    }
}

/// Put the events of every chunk (`slots`) in time order into
/// `trace.events`, renumbering their ids with `maps`; without a spare to
/// leave, the slots' pages are given back as the merge proceeds.
fn merge_events(
    trace: &mut Trace,
    outs: &mut [Decoded<'_>],
    maps: &IdMaps,
    slots: &[MaybeUninit<Event>],
    spare: bool,
) {
    // Untyped events' fields: each chunk's records follow the previous
    // chunk's, so a chunk-local record number moves by the chunk's base.
    // (The chunks' stores are moved, not copied: the load never holds
    // them twice.)
    let raw_base: Vec<Option<u32>> = outs
        .iter_mut()
        .map(|d| {
            let raw = std::mem::take(&mut d.out.local.raw);
            trace.raw_args.append(raw).ok()
        })
        .collect();
    // The sorted runs of every chunk, in file order.
    let mut runs: Vec<order::Run<'_>> = Vec::new();
    for (i, d) in outs.iter().enumerate() {
        let Some(evs) = slots.get(d.offset..d.offset + d.out.n) else {
            continue; // cannot happen: a chunk writes inside its slots
        };
        // SAFETY: decode_chunk initialised the first `out.n` slots of the
        // chunk's range (it counts its writes, in order from 0), and
        // MaybeUninit<Event> has Event's layout.
        let evs = unsafe { &*(evs as *const [MaybeUninit<Event>] as *const [Event]) };
        let mut start = 0;
        for &r in d.out.runs.iter().chain([&evs.len()]) {
            if r > start {
                runs.push(order::Run {
                    events: &evs[start..r],
                    chunk: i,
                });
            }
            start = r;
        }
    }
    // Without a spare to leave, nothing reads the slots after the merge:
    // their pages can go as it proceeds.
    let reclaim = (!spare)
        .then(|| slots.as_ptr() as usize..slots.as_ptr() as usize + std::mem::size_of_val(slots));
    trace.events = order::merge_runs(&runs, reclaim, &|c, ev| {
        if let Some(map) = maps.get(c) {
            fix_event(map, raw_base.get(c).copied().flatten(), ev);
        }
    });
    drop(runs);
}

/// What the chunks found besides their events, added up in file order.
#[derive(Default)]
pub(super) struct ChunkFacts {
    /// Events per name id.
    counts: Vec<u64>,
    /// Task records (time, change), ids renumbered.
    ops: Vec<(u64, TaskOp)>,
    tallies: chunk::Tallies,
    /// tid -> latest (time, comm) seen in events.
    comm_by_tid: FxMap<i32, (u64, StrId)>,
    tgid_by_tid: FxMap<i32, i32>,
    saw_fork: bool,
    saw_exit: bool,
    lost_records: u64,
    lost_samples: u64,
    lost_by_cpu: Vec<schedscope_trace::CpuLoss>,
    loss_marks: Vec<schedscope_trace::LossMark>,
    lost_samples_list: Vec<chunk::LostSamples>,
    id_cpu: Vec<(u64, u32)>,
    /// Of the file's records, and of the decompressed stream's.
    anomalies: [[Anomaly; 9]; 2],
}

impl ChunkFacts {
    /// No chunk's facts yet.
    pub(super) fn new(trace: &Trace) -> ChunkFacts {
        ChunkFacts {
            counts: vec![0u64; trace.event_names.len()],
            ..ChunkFacts::default()
        }
    }

    /// Add one chunk's facts (the chunks in file order; `dec`: of the
    /// decompressed stream); memory mappings go straight to the trace.
    pub(super) fn add(
        &mut self,
        trace: &mut Trace,
        out: chunk::ChunkOut<'_>,
        map: &IdMap,
        dec: bool,
    ) {
        let f = self;
        let (smap, mmap, _) = map;
        // Tallies: chunk by chunk, in file order, ids renumbered as above.
        for mut t in out.tallies.list {
            remap_local(&mut t.data, smap, mmap);
            // (a tally counts payloads: raw-field records are not kept for it)
            if let EventData::Other(Some(_)) = t.data {
                t.data = EventData::Other(None);
            }
            f.tallies.add(t.name, t.cpu, t.data, t.count);
        }
        let s = |id: StrId| smap.get(id.0 as usize).copied().unwrap_or_default();
        for (c, o) in f.counts.iter_mut().zip(&out.counts) {
            *c += o;
        }
        for (ts, op) in out.task_ops {
            let op = match op {
                TaskOp::Comm { pid, tid, comm } => TaskOp::Comm {
                    pid,
                    tid,
                    comm: s(comm),
                },
                o => o,
            };
            f.ops.push((ts, op));
        }
        for (tid, (ts, c)) in out.local.comm_by_tid {
            let e = f.comm_by_tid.entry(tid).or_insert((ts, s(c)));
            if e.0 <= ts {
                *e = (ts, s(c));
            }
        }
        f.tgid_by_tid.extend(out.local.tgid_by_tid);
        trace.mappings.extend(out.mappings);
        f.saw_fork |= out.saw_fork_records;
        f.saw_exit |= out.saw_exit_records;
        f.lost_records = f.lost_records.saturating_add(out.lost);
        f.lost_samples = f.lost_samples.saturating_add(out.lost_samples);
        for l in &out.lost_by_cpu {
            schedscope_trace::CpuLoss::merge_into(&mut f.lost_by_cpu, l);
        }
        f.lost_samples_list.extend(out.lost_samples_list);
        f.loss_marks.extend(out.loss_marks);
        f.id_cpu.extend(out.id_cpu);
        let a = &mut f.anomalies[usize::from(dec)];
        for (dst, src) in a.iter_mut().zip([
            &out.unknown_id,
            &out.unknown_common_type,
            &out.no_raw,
            &out.short_sample,
            &out.short_payload,
            &out.unknown_record,
            &out.short_record,
            &out.bad_cpu,
            &out.bad_time,
        ]) {
            dst.merge(src);
        }
    }
}

/// The task facts [`build_tasks`] reads.
struct TaskFacts {
    ops: Vec<(u64, TaskOp)>,
    comm_by_tid: FxMap<i32, (u64, StrId)>,
    tgid_by_tid: FxMap<i32, i32>,
    saw_fork: bool,
    saw_exit: bool,
}

/// Build the task table: COMM/FORK/EXIT records in time order, then what
/// the events tell (fork/exit events when the file has no such records,
/// the tracing data's saved cmdlines, sample tids, event comms), by the
/// rules of [`TaskTableBuilder`].
fn build_tasks(trace: &mut Trace, t: TaskFacts, td: &tracing_data::TracingData, events: &[Event]) {
    let TaskFacts {
        mut ops,
        comm_by_tid,
        tgid_by_tid,
        saw_fork,
        saw_exit,
    } = t;
    ops.sort_by_key(|(ts, _)| *ts);
    let mut b = TaskTableBuilder::from_table(std::mem::take(&mut trace.tasks));
    for (ts, op) in ops {
        match op {
            TaskOp::Comm { pid, tid, comm } => {
                b.comm_record(Tid(pid), Tid(tid), trace.strings.get(comm))
            }
            TaskOp::Fork { pid, tid, ptid } => b.fork_record(Tid(pid), Tid(tid), Tid(ptid), Ts(ts)),
            TaskOp::Exit { tid } => b.exit(Tid(tid), Ts(ts)),
        }
    }
    b.fork_exit_events(events, &trace.strings, !saw_fork, !saw_exit);
    for (pid, comm) in &td.cmdlines {
        b.saved_cmdline(Tid(*pid), comm);
    }
    let mut tg: Vec<_> = tgid_by_tid.into_iter().collect();
    tg.sort_unstable();
    for (tid, pid) in tg {
        b.sample_tgid(Tid(tid), Tid(pid));
    }
    let mut cm: Vec<_> = comm_by_tid.into_iter().collect();
    cm.sort_unstable_by_key(|(tid, _)| *tid);
    for (tid, (_ts, c)) in cm {
        b.event_comm(Tid(tid), trace.strings.get(c));
    }
    trace.tasks = b.finish();
}

/// Renumber the chunk-local ids of an event payload with a chunk's maps
/// (its local string and mask ids to the trace's).
pub(crate) fn remap_local(d: &mut EventData, smap: &[StrId], mmap: &[MaskId]) {
    remap(
        d,
        &|id: StrId| smap.get(id.0 as usize).copied().unwrap_or_default(),
        &|id: MaskId| mmap.get(id.0 as usize).copied().unwrap_or_default(),
    );
}

/// Renumber the chunk-local ids of an event payload.
fn remap(d: &mut EventData, s: &impl Fn(StrId) -> StrId, m: &impl Fn(MaskId) -> MaskId) {
    match d {
        EventData::Switch {
            prev_comm,
            next_comm,
            ..
        } => {
            *prev_comm = s(*prev_comm);
            *next_comm = s(*next_comm);
        }
        EventData::Wakeup { comm, .. }
        | EventData::Migrate { comm, .. }
        | EventData::Exit { comm, .. } => *comm = s(*comm),
        EventData::Fork { child_comm, .. } => *child_comm = s(*child_comm),
        EventData::Exec { filename, .. } => *filename = s(*filename),
        EventData::IpiSendCpumask { mask, .. } => *mask = m(*mask),
        EventData::IpiRaise { mask, reason } => {
            *mask = m(*mask);
            *reason = s(*reason);
        }
        _ => {}
    }
}
