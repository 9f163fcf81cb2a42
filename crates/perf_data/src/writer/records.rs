//! Records the writer synthesizes (SAMPLE of a tracepoint, LOST,
//! LOST_SAMPLES, COMM, FORK, MMAP, FINISHED_ROUND), each encoded with the
//! sample_id trailer of the file's attrs.

use super::{put32, put64, AttrSpec, PerfDataWriter};
use crate::abi::{self, RecordType};
use std::io::{self, Read, Seek, Write};

impl<W: Read + Write + Seek> PerfDataWriter<W> {
    /// The attr that owns sample id `id`.
    pub fn attr_for_id(&self, id: u64) -> Option<&AttrSpec> {
        self.attrs.iter().find(|a| a.ids.contains(&id))
    }

    /// Append a PERF_RECORD_SAMPLE for a tracepoint hit, encoded per the
    /// sample_type of the attr that owns `id` (IDENTIFIER, IP (0), TID, TIME,
    /// ID, CPU, PERIOD (1), CALLCHAIN (empty) and RAW are supported). `raw`
    /// is the tracepoint payload (common_* fields first, as the kernel
    /// emits it).
    #[allow(clippy::too_many_arguments)]
    pub fn sample_tracepoint(
        &mut self,
        id: u64,
        pid: u32,
        tid: u32,
        time: u64,
        cpu: u32,
        raw: &[u8],
    ) -> io::Result<()> {
        let st = self
            .attr_for_id(id)
            .map(|a| a.attr.sample_type)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("sample id {id} belongs to no attr of this file"),
                )
            })?;
        let mut rec = Vec::with_capacity(80 + raw.len());
        rec.extend_from_slice(&[0u8; 8]);
        use abi::sample as s;
        if st & s::IDENTIFIER != 0 {
            put64(&mut rec, id);
        }
        if st & s::IP != 0 {
            put64(&mut rec, 0);
        }
        if st & s::TID != 0 {
            put32(&mut rec, pid);
            put32(&mut rec, tid);
        }
        if st & s::TIME != 0 {
            put64(&mut rec, time);
        }
        if st & s::ADDR != 0 {
            put64(&mut rec, 0);
        }
        if st & s::ID != 0 {
            put64(&mut rec, id);
        }
        if st & s::STREAM_ID != 0 {
            put64(&mut rec, id);
        }
        if st & s::CPU != 0 {
            put32(&mut rec, cpu);
            put32(&mut rec, 0);
        }
        if st & s::PERIOD != 0 {
            put64(&mut rec, 1);
        }
        if st & s::CALLCHAIN != 0 {
            put64(&mut rec, 0);
        }
        if st & s::RAW != 0 {
            // u32 size + payload, padded so the record stays 8-aligned.
            let padded = (raw.len() + 4).div_ceil(8) * 8 - 4;
            put32(&mut rec, padded as u32);
            rec.extend_from_slice(raw);
            rec.resize(rec.len() + padded - raw.len(), 0);
        }
        finish_header(&mut rec, RecordType::SAMPLE, 0)?;
        self.write_records(&rec)
    }

    /// The sample_id trailer of non-sample records (layout of the first
    /// attr), with sample id 0 (synthesized).
    fn sample_id(&self, rec: &mut Vec<u8>, pid: u32, tid: u32, time: u64, cpu: u32) {
        self.sample_id_of(rec, pid, tid, time, cpu, 0);
    }

    /// The sample_id trailer naming event id `id`.
    fn sample_id_of(&self, rec: &mut Vec<u8>, pid: u32, tid: u32, time: u64, cpu: u32, id: u64) {
        use abi::sample as s;
        let st = self.id_sample_type;
        if st & s::TID != 0 {
            put32(rec, pid);
            put32(rec, tid);
        }
        if st & s::TIME != 0 {
            put64(rec, time);
        }
        if st & s::ID != 0 {
            put64(rec, id);
        }
        if st & s::STREAM_ID != 0 {
            put64(rec, id);
        }
        if st & s::CPU != 0 {
            put32(rec, cpu);
            put32(rec, 0);
        }
        if st & s::IDENTIFIER != 0 {
            put64(rec, id);
        }
    }

    /// Append a PERF_RECORD_LOST: the kernel's record, in `cpu`'s ring,
    /// that `lost` samples of event id `id` were dropped (written when the
    /// ring has room again; `time` then).
    pub fn lost(&mut self, id: u64, cpu: u32, lost: u64, time: u64) -> io::Result<()> {
        let mut rec = Vec::with_capacity(64);
        rec.extend_from_slice(&[0u8; 8]);
        put64(&mut rec, id);
        put64(&mut rec, lost);
        self.sample_id_of(&mut rec, 0, 0, time, cpu, id);
        finish_header(&mut rec, RecordType::LOST, 0)?;
        self.write_records(&rec)
    }

    /// Append a PERF_RECORD_LOST_SAMPLES: the kernel's count of samples of
    /// event id `id` on `cpu` that never reached the ring (as perf writes
    /// at the end of a recording from the PERF_FORMAT_LOST counters).
    pub fn lost_samples(&mut self, id: u64, cpu: u32, lost: u64, time: u64) -> io::Result<()> {
        let mut rec = Vec::with_capacity(56);
        rec.extend_from_slice(&[0u8; 8]);
        put64(&mut rec, lost);
        self.sample_id_of(&mut rec, 0, 0, time, cpu, id);
        finish_header(&mut rec, RecordType::LOST_SAMPLES, 0)?;
        self.write_records(&rec)
    }

    /// Append a PERF_RECORD_COMM (pid = tgid) with a zero-id sample_id
    /// trailer, as perf's synthesized records have.
    pub fn comm(&mut self, pid: u32, tid: u32, comm: &str, time: u64) -> io::Result<()> {
        let mut rec = Vec::with_capacity(64);
        rec.extend_from_slice(&[0u8; 8]);
        put32(&mut rec, pid);
        put32(&mut rec, tid);
        let name = comm.as_bytes();
        let name = &name[..name.len().min(15)];
        rec.extend_from_slice(name);
        let padded = (name.len() + 1).div_ceil(8) * 8;
        rec.resize(rec.len() + padded - name.len(), 0);
        self.sample_id(&mut rec, pid, tid, time, 0);
        finish_header(&mut rec, RecordType::COMM, 0)?;
        self.write_records(&rec)
    }

    /// Append a PERF_RECORD_FORK (`pid`/`tid` the child, `ppid`/`ptid` the parent).
    pub fn fork(&mut self, pid: u32, ppid: u32, tid: u32, ptid: u32, time: u64) -> io::Result<()> {
        let mut rec = Vec::with_capacity(64);
        rec.extend_from_slice(&[0u8; 8]);
        put32(&mut rec, pid);
        put32(&mut rec, ppid);
        put32(&mut rec, tid);
        put32(&mut rec, ptid);
        put64(&mut rec, time);
        self.sample_id(&mut rec, pid, tid, time, 0);
        finish_header(&mut rec, RecordType::FORK, 0)?;
        self.write_records(&rec)
    }

    /// Append a PERF_RECORD_MMAP (`misc` e.g. [`abi::MISC_KERNEL`] for the kernel
    /// map perf synthesizes as `[kernel.kallsyms]_text`, pid `u32::MAX`).
    #[allow(clippy::too_many_arguments)]
    pub fn mmap(
        &mut self,
        pid: u32,
        tid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        filename: &str,
        misc: u16,
    ) -> io::Result<()> {
        let mut rec = Vec::with_capacity(64 + filename.len());
        rec.extend_from_slice(&[0u8; 8]);
        put32(&mut rec, pid);
        put32(&mut rec, tid);
        put64(&mut rec, start);
        put64(&mut rec, len);
        put64(&mut rec, pgoff);
        let name = filename.as_bytes();
        let name = &name[..name.len().min(4095)];
        rec.extend_from_slice(name);
        let padded = (name.len() + 1).div_ceil(8) * 8;
        rec.resize(rec.len() + padded - name.len(), 0);
        self.sample_id(&mut rec, pid, tid, 0, 0);
        finish_header(&mut rec, RecordType::MMAP, misc)?;
        self.write_records(&rec)
    }

    /// Append a PERF_RECORD_FINISHED_ROUND: every record before it may be
    /// sorted and delivered by readers that process rounds (perf does).
    pub fn finished_round(&mut self) -> io::Result<()> {
        let mut rec = Vec::with_capacity(8);
        rec.extend_from_slice(&[0u8; 8]);
        finish_header(&mut rec, RecordType::FINISHED_ROUND, 0)?;
        self.write_records(&rec)
    }
}

/// Fill the perf_event_header of a record built with 8 placeholder bytes.
fn finish_header(rec: &mut [u8], ty: RecordType, misc: u16) -> io::Result<()> {
    let size = u16::try_from(rec.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "record of {} bytes exceeds the 64 KiB record limit",
                rec.len()
            ),
        )
    })?;
    rec[0..4].copy_from_slice(&ty.0.to_ne_bytes());
    rec[4..6].copy_from_slice(&misc.to_ne_bytes());
    rec[6..8].copy_from_slice(&size.to_ne_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::writer::tests::{spec, u64_at};
    use crate::writer::{Features, PerfDataWriter};
    use std::io::Cursor;

    #[test]
    fn lost_samples_record_names_event_cpu_and_time() {
        let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), vec![spec(1), spec(2)]).unwrap();
        w.lost_samples(21, 1, 5, 77).unwrap();
        let (cur, sum) = w.finish(&Features::default()).unwrap();
        let f = cur.into_inner();
        let r = sum.data_offset as usize;
        assert_eq!(u32::from_ne_bytes(f[r..r + 4].try_into().unwrap()), 13);
        // header 8 + lost 8 + sample_id (tid 8, time 8, cpu 8, identifier 8).
        assert_eq!(u16::from_ne_bytes([f[r + 6], f[r + 7]]), 48);
        assert_eq!(u64_at(&f, r + 8), 5, "lost");
        assert_eq!(u64_at(&f, r + 24), 77, "time");
        assert_eq!(
            u32::from_ne_bytes(f[r + 32..r + 36].try_into().unwrap()),
            1,
            "cpu"
        );
        assert_eq!(u64_at(&f, r + 40), 21, "identifier");
    }
}
