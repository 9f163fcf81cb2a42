//! perf.data output through `schedscope_perf_data::PerfDataWriter`.
//!
//! Tracepoint payloads are laid out from this kernel's real format files
//! (copied into `fixtures/formats/`), read with the project's tracefs format
//! parser: field offsets come from the files, never from constants here. The
//! same files are embedded as the file's tracing data, so `perf script`
//! decodes the result with its own libtraceevent.

use crate::config::Isa;
use crate::ftrace::prev_state_text;
use crate::model::{SimData, Simulation};
use schedscope_parser::tracefs_format::{parse_format, EventFormat, FieldKind};
use schedscope_perf_data::{AttrSpec, EventAttr, Features, PerfDataWriter, TracingData};
use std::io::{self, Cursor};

/// (system, event, format file text) of every event the simulator emits.
pub const FORMATS: &[(&str, &str, &str)] = &[
    (
        "sched",
        "sched_switch",
        include_str!("../../../fixtures/formats/sched/sched_switch/format"),
    ),
    (
        "sched",
        "sched_waking",
        include_str!("../../../fixtures/formats/sched/sched_waking/format"),
    ),
    (
        "sched",
        "sched_wakeup",
        include_str!("../../../fixtures/formats/sched/sched_wakeup/format"),
    ),
    (
        "sched",
        "sched_wakeup_new",
        include_str!("../../../fixtures/formats/sched/sched_wakeup_new/format"),
    ),
    (
        "sched",
        "sched_migrate_task",
        include_str!("../../../fixtures/formats/sched/sched_migrate_task/format"),
    ),
    (
        "kvm",
        "kvm_exit",
        include_str!("../../../fixtures/formats/kvm/kvm_exit/format"),
    ),
    (
        "kvm",
        "kvm_entry",
        include_str!("../../../fixtures/formats/kvm/kvm_entry/format"),
    ),
];

/// sched_stat_runtime's format, written only when the simulation has
/// such events (so that files without them stay as they were).
const STAT_RUNTIME: (&str, &str, &str) = (
    "sched",
    "sched_stat_runtime",
    include_str!("../../../fixtures/formats/sched/sched_stat_runtime/format"),
);

const HEADER_PAGE: &str = include_str!("../../../fixtures/formats/header_page");
const HEADER_EVENT: &str = include_str!("../../../fixtures/formats/header_event");

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// A record builder for one event format.
struct Rec<'a> {
    fmt: &'a EventFormat,
    buf: Vec<u8>,
}

impl<'a> Rec<'a> {
    fn new(fmt: &'a EventFormat, pid: i32) -> io::Result<Rec<'a>> {
        let size = fmt
            .fields
            .iter()
            .map(|f| (f.offset + f.size) as usize)
            .max()
            .unwrap_or(0);
        let mut r = Rec {
            fmt,
            buf: vec![0; size],
        };
        r.int("common_type", u64::from(fmt.id))?;
        r.int("common_flags", 1)?;
        r.int("common_preempt_count", 2)?;
        r.int("common_pid", pid as u32 as u64)?;
        Ok(r)
    }

    fn field(&self, name: &str) -> io::Result<&'a schedscope_parser::tracefs_format::Field> {
        self.fmt
            .field(name)
            .ok_or_else(|| bad(format!("format of {} has no field {name}", self.fmt.name)))
    }

    fn int(&mut self, name: &str, v: u64) -> io::Result<&mut Self> {
        let f = self.field(name)?;
        let (o, n) = (f.offset as usize, f.size as usize);
        if n > 8 || f.kind != FieldKind::Scalar {
            return Err(bad(format!("{}.{name} is not an integer", self.fmt.name)));
        }
        self.buf[o..o + n].copy_from_slice(&v.to_ne_bytes()[..n]);
        Ok(self)
    }

    fn str(&mut self, name: &str, s: &str) -> io::Result<&mut Self> {
        let f = self.field(name)?;
        match f.kind {
            FieldKind::Array { .. } => {
                let (o, n) = (f.offset as usize, f.size as usize);
                let b = s.as_bytes();
                let k = b.len().min(n.saturating_sub(1));
                self.buf[o..o + k].copy_from_slice(&b[..k]);
            }
            FieldKind::DataLoc => {
                let off = self.buf.len();
                self.buf.extend_from_slice(s.as_bytes());
                self.buf.push(0);
                let len = s.len() + 1;
                let loc = (off as u32) | ((len as u32) << 16);
                let o = f.offset as usize;
                self.buf[o..o + 4].copy_from_slice(&loc.to_ne_bytes());
            }
            _ => return Err(bad(format!("{}.{name} is not a string", self.fmt.name))),
        }
        Ok(self)
    }
}

/// Write the simulation as perf.data bytes.
pub fn to_perf_data(sim: &Simulation) -> io::Result<Vec<u8>> {
    let has_stat = sim
        .events
        .iter()
        .any(|e| matches!(e.data, SimData::StatRuntime { .. }));
    let formats: Vec<(&str, &str, &str)> = FORMATS
        .iter()
        .copied()
        .chain(has_stat.then_some(STAT_RUNTIME))
        .collect();
    let fmts: Vec<EventFormat> = formats
        .iter()
        .map(|(sys, ev, text)| {
            parse_format(text)
                .map(|mut f| {
                    f.system = sys.to_string();
                    f
                })
                .map_err(|e| bad(format!("fixtures/formats/{sys}/{ev}/format: {e}")))
        })
        .collect::<io::Result<_>>()?;
    let ncpu = u64::from(sim.config.cpus);
    let id_of = |e: usize, cpu: u32| (e as u64 + 1) * 1000 + u64::from(cpu);
    let attrs: Vec<AttrSpec> = fmts
        .iter()
        .enumerate()
        .map(|(e, f)| AttrSpec {
            attr: EventAttr::tracepoint(u64::from(f.id)),
            name: f.full_name(),
            ids: (0..ncpu).map(|c| id_of(e, c as u32)).collect(),
        })
        .collect();
    let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), attrs)?;
    for t in &sim.threads {
        w.comm(t.tgid as u32, t.tid as u32, &t.comm, 0)?;
    }
    let marker = fmts[0].preempt_marker().unwrap_or(0);
    let mut lost = sim.lost.iter().peekable();
    for (n, ev) in sim.events.iter().enumerate() {
        // The kernel writes a CPU's PERF_RECORD_LOST when its ring has room
        // again, before the next event it keeps.
        while let Some(l) = lost.next_if(|l| l.ts <= ev.ts) {
            w.lost(id_of(0, l.cpu), l.cpu, l.n, l.ts)?;
        }
        let (e, raw) = match ev.data {
            SimData::Switch { prev, out, next } => {
                let state = match prev_state_text(prev, out) {
                    "S" => 1,
                    "R+" => marker,
                    _ => 0,
                };
                let mut r = Rec::new(&fmts[0], ev.pid)?;
                r.str("prev_comm", &sim.comm(prev, ev.cpu))?
                    .int("prev_pid", prev as u32 as u64)?
                    .int("prev_prio", 120)?
                    .int("prev_state", state)?
                    .str("next_comm", &sim.comm(next, ev.cpu))?
                    .int("next_pid", next as u32 as u64)?
                    .int("next_prio", 120)?;
                (0, r.buf)
            }
            SimData::Waking { tid, target }
            | SimData::Wakeup { tid, target }
            | SimData::WakeupNew { tid, target } => {
                let e = match ev.data {
                    SimData::Waking { .. } => 1,
                    SimData::Wakeup { .. } => 2,
                    _ => 3,
                };
                let mut r = Rec::new(&fmts[e], ev.pid)?;
                r.str("comm", &sim.comm(tid, 0))?
                    .int("pid", tid as u32 as u64)?
                    .int("prio", 120)?
                    .int("target_cpu", u64::from(target))?;
                (e, r.buf)
            }
            SimData::Migrate { tid, orig, dest } => {
                let mut r = Rec::new(&fmts[4], ev.pid)?;
                r.str("comm", &sim.comm(tid, 0))?
                    .int("pid", tid as u32 as u64)?
                    .int("prio", 120)?
                    .int("orig_cpu", u64::from(orig))?
                    .int("dest_cpu", u64::from(dest))?;
                (4, r.buf)
            }
            SimData::KvmExit {
                reason,
                isa,
                vcpu,
                rip,
            } => {
                let mut r = Rec::new(&fmts[5], ev.pid)?;
                r.int("exit_reason", u64::from(reason))?
                    .int("guest_rip", rip)?
                    .int(
                        "isa",
                        match isa {
                            Isa::Vmx => 1,
                            Isa::Svm => 2,
                        },
                    )?
                    .int("vcpu_id", u64::from(vcpu))?;
                (5, r.buf)
            }
            SimData::StatRuntime { runtime } => {
                let f = fmts
                    .get(7)
                    .ok_or_else(|| bad("no sched_stat_runtime format".into()))?;
                let mut r = Rec::new(f, ev.pid)?;
                r.str("comm", &sim.comm(ev.pid, ev.cpu))?
                    .int("pid", ev.pid as u32 as u64)?
                    .int("runtime", runtime)?;
                (7, r.buf)
            }
            SimData::KvmEntry { vcpu, rip } => {
                let mut r = Rec::new(&fmts[6], ev.pid)?;
                r.int("vcpu_id", u64::from(vcpu))?.int("rip", rip)?;
                (6, r.buf)
            }
        };
        let pid = if ev.pid == 0 { 0 } else { sim.tgid(ev.pid) };
        w.sample_tracepoint(
            id_of(e, ev.cpu),
            pid as u32,
            ev.pid as u32,
            ev.ts,
            ev.cpu,
            &raw,
        )?;
        if n % 4096 == 4095 {
            w.finished_round()?;
        }
    }
    w.finished_round()?;
    let mut td = TracingData {
        page_size: 4096,
        header_page: HEADER_PAGE.as_bytes().to_vec(),
        header_event: HEADER_EVENT.as_bytes().to_vec(),
        ..TracingData::default()
    };
    for (sys, _, text) in &formats {
        td.add_event_format(sys, text.as_bytes().to_vec());
    }
    let features = Features {
        tracing_data: Some(td.to_bytes()?),
        hostname: Some("schedscope-sim".into()),
        osrelease: Some("6.18.44-fc-v509".into()),
        arch: Some("x86_64".into()),
        nr_cpus: Some((sim.config.cpus, sim.config.cpus)),
        cmdline: vec![
            "schedscope-sim".into(),
            "--scenario".into(),
            sim.config.name.clone(),
            "--seed".into(),
            sim.config.seed.to_string(),
        ],
        ..Features::default()
    };
    let (cur, _) = w.finish(&features)?;
    Ok(cur.into_inner())
}
