//! The cache file's bytes: LEB128 varints (zigzag for signed values),
//! times as differences from the previous one; each CPU's part (its runs,
//! waiting steps and overlays) behind its length, so that the parts
//! decode in parallel. Every read is bounds-checked and every count is checked
//! against the bytes left before anything is allocated: a damaged file
//! gives `None`, never a panic. (A damage that still decodes is caught by
//! the checksum over the whole file, see the module above.)

use super::Meta;
use crate::groups::CpuGroups;
use crate::index::{CpuLane, Lanes, Pressure, Tid};
use crate::overlay::{Marks, Spans};

/// Appends varints to a byte vector.
#[derive(Default)]
pub(super) struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    pub fn i(&mut self, v: i64) {
        self.u(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn str(&mut self, s: &str) {
        self.u(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// Reads what [`Writer`] wrote; every method is None past the end or on a
/// value out of range.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    #[inline]
    pub fn u(&mut self) -> Option<u64> {
        // most values (gaps, counts, task ids' first byte) take one byte
        let b = *self.buf.get(self.pos)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(u64::from(b));
        }
        self.u_long()
    }

    fn u_long(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return None;
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    pub fn i(&mut self) -> Option<i64> {
        let z = self.u()?;
        Some(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    pub fn tid(&mut self) -> Option<Tid> {
        Tid::try_from(self.i()?).ok()
    }

    pub fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u()?).ok()
    }

    /// A count of items that take at least `min_bytes` each: never more
    /// than the bytes left could hold.
    pub fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let n = usize::try_from(self.u()?).ok()?;
        (n <= (self.buf.len() - self.pos) / min_bytes.max(1)).then_some(n)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let b = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(b)
    }

    pub fn str(&mut self) -> Option<String> {
        let n = self.count(1)?;
        String::from_utf8(self.bytes(n)?.to_vec()).ok()
    }
}

/// Write the lanes' meta data and every lane.
pub(super) fn encode(w: &mut Writer, meta: &Meta, lanes: &Lanes) {
    w.u(meta.start);
    w.u(meta.end);
    w.u(meta.events);
    w.u(meta.threads.len() as u64);
    for (tid, tgid, comm) in &meta.threads {
        w.i(i64::from(*tid));
        match tgid {
            Some(t) => {
                w.u(1);
                w.i(i64::from(*t));
            }
            None => w.u(0),
        }
        w.str(comm);
    }
    let g = &meta.groups;
    w.u(u64::from(g.by_topology));
    w.u(g.groups.len() as u64);
    for (cpus, label) in g.groups.iter().zip(&g.labels) {
        w.str(label);
        w.u(cpus.len() as u64);
        for &c in cpus {
            w.u(c as u64);
        }
    }
    // each CPU's part behind its length, so that they decode in parallel
    w.u(lanes.cpus.len() as u64);
    for part in in_parallel(lanes.cpus.len(), |c| cpu_out(lanes, c)) {
        w.u(part.len() as u64);
        w.0.extend_from_slice(&part);
    }
    spans_out(w, &lanes.any_waiting);
}

/// `f(0..n)` in order, computed on up to as many threads as there are
/// cores (consecutive indexes per thread).
fn in_parallel<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per = n.div_ceil(threads.max(1)).max(1);
    let f = &f;
    std::thread::scope(|s| {
        let jobs: Vec<_> = (0..n)
            .step_by(per)
            .map(|lo| s.spawn(move || (lo..(lo + per).min(n)).map(f).collect::<Vec<T>>()))
            .collect();
        jobs.into_iter()
            .flat_map(|j| j.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// CPU `c`'s part: its lane and overlays.
fn cpu_out(lanes: &Lanes, c: usize) -> Vec<u8> {
    let mut part = Writer::default();
    lane_out(&mut part, &lanes.cpus[c]);
    marks_out(&mut part, lanes.wakeups.get(c));
    marks_out(&mut part, lanes.preemptions.get(c));
    spans_out(&mut part, lanes.wasted.get(c).unwrap_or(&Spans::default()));
    spans_out(
        &mut part,
        lanes.repaired.get(c).unwrap_or(&Spans::default()),
    );
    part.0
}

/// One CPU's part: its lane and its overlays.
type CpuPart = (CpuLane, Marks, Marks, Spans, Spans);

fn cpu_in(bytes: &[u8], cpu: u32) -> Option<CpuPart> {
    let mut r = Reader::new(bytes);
    let part = (
        lane_in(&mut r, cpu)?,
        marks_in(&mut r)?,
        marks_in(&mut r)?,
        spans_in(&mut r)?,
        spans_in(&mut r)?,
    );
    r.at_end().then_some(part)
}

/// Decode the CPUs' parts on up to as many threads as there are cores.
fn cpus_in(parts: &[&[u8]]) -> Option<Vec<CpuPart>> {
    in_parallel(parts.len(), |c| cpu_in(parts[c], c as u32))
        .into_iter()
        .collect()
}

/// Read what [`encode`] wrote; None unless it is whole and consistent.
pub(super) fn decode(r: &mut Reader) -> Option<(Meta, Lanes)> {
    let (start, end, events) = (r.u()?, r.u()?, r.u()?);
    let n = r.count(3)?;
    let mut threads = Vec::with_capacity(n);
    for _ in 0..n {
        let tid = r.tid()?;
        let tgid = match r.u()? {
            0 => None,
            1 => Some(r.tid()?),
            _ => return None,
        };
        threads.push((tid, tgid, r.str()?));
    }
    let by_topology = match r.u()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let n = r.count(2)?;
    let mut groups = CpuGroups {
        groups: Vec::with_capacity(n),
        labels: Vec::with_capacity(n),
        by_topology,
    };
    for _ in 0..n {
        groups.labels.push(r.str()?);
        let k = r.count(1)?;
        let cpus = (0..k)
            .map(|_| usize::try_from(r.u()?).ok())
            .collect::<Option<Vec<usize>>>()?;
        groups.groups.push(cpus);
    }
    let ncpu = r.count(1)?;
    if groups.groups.iter().flatten().any(|&c| c >= ncpu) {
        return None;
    }
    let parts = (0..ncpu)
        .map(|_| {
            let n = r.count(1)?;
            r.bytes(n)
        })
        .collect::<Option<Vec<&[u8]>>>()?;
    let mut lanes = Lanes {
        any_waiting: spans_in(r)?,
        ..Lanes::default()
    };
    for (lane, wakeups, preemptions, wasted, repaired) in cpus_in(&parts)? {
        lanes.cpus.push(lane);
        lanes.wakeups.push(wakeups);
        lanes.preemptions.push(preemptions);
        lanes.wasted.push(wasted);
        lanes.repaired.push(repaired);
    }
    let meta = Meta {
        start,
        end,
        events,
        threads,
        groups,
    };
    Some((meta, lanes))
}

/// A lane: its runs (gap after the previous run, length, tid, and the
/// process as a difference from the tid), then its waiting steps.
fn lane_out(w: &mut Writer, lane: &CpuLane) {
    w.u(lane.len() as u64);
    let mut prev = 0;
    for ((s, e, tid), &key) in lane.runs().zip(lane.keys()) {
        w.u(s - prev);
        w.u(e - s);
        w.i(i64::from(tid));
        w.i(i64::from(key) - i64::from(tid));
        prev = e;
    }
    let (times, counts) = lane.pressure.steps();
    w.u(times.len() as u64);
    let mut prev = 0;
    for (&t, &c) in times.iter().zip(counts) {
        w.u(t - prev);
        w.u(u64::from(c));
        prev = t;
    }
}

fn lane_in(r: &mut Reader, cpu: u32) -> Option<CpuLane> {
    let n = r.count(4)?;
    let mut runs = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    let mut prev = 0u64;
    for _ in 0..n {
        let s = prev.checked_add(r.u()?)?;
        let e = s.checked_add(r.u()?)?;
        let tid = r.tid()?;
        let key = Tid::try_from(i64::from(tid) + r.i()?).ok()?;
        runs.push((s, e, tid));
        keys.push(key);
        prev = e;
    }
    let n = r.count(2)?;
    let mut times = Vec::with_capacity(n);
    let mut counts = Vec::with_capacity(n);
    let mut prev = 0u64;
    for i in 0..n {
        let d = r.u()?;
        if i > 0 && d == 0 {
            return None;
        }
        prev = prev.checked_add(d)?;
        times.push(prev);
        counts.push(r.u32()?);
    }
    let pressure = Pressure::from_steps(times, counts)?;
    Some(CpuLane::from_runs(cpu, &runs, keys, pressure))
}

fn spans_out(w: &mut Writer, s: &Spans) {
    w.u(s.iter().count() as u64);
    let mut prev = 0;
    for (a, b) in s.iter() {
        w.u(a - prev);
        w.u(b - a);
        prev = b;
    }
}

fn spans_in(r: &mut Reader) -> Option<Spans> {
    let n = r.count(2)?;
    let mut v = Vec::with_capacity(n);
    let mut prev = 0u64;
    for _ in 0..n {
        let a = prev.checked_add(r.u()?)?;
        let b = a.checked_add(r.u()?)?;
        v.push((a, b));
        prev = b;
    }
    Some(Spans::new(v))
}

fn marks_out(w: &mut Writer, m: Option<&Marks>) {
    let Some(m) = m else {
        w.u(0);
        return;
    };
    w.u(m.pairs().count() as u64);
    let mut prev = 0;
    for (t, v) in m.pairs() {
        w.u(t - prev);
        w.u(v);
        prev = t;
    }
}

fn marks_in(r: &mut Reader) -> Option<Marks> {
    let n = r.count(2)?;
    let mut v = Vec::with_capacity(n);
    let mut prev = 0u64;
    for _ in 0..n {
        prev = prev.checked_add(r.u()?)?;
        v.push((prev, r.u()?));
    }
    Some(Marks::new(v))
}
