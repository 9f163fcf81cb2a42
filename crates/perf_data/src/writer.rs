//! perf.data (PERFILE2) writer, used by the collector and the scheduling
//! simulator (`schedscope-sim`).
//!
//! Layout written (tools/perf/Documentation/perf.data-file-format.txt):
//!
//! ```text
//! [file header, 104 bytes]          patched by finish()
//! [ids of attr 0][ids of attr 1]... u64 each
//! [attrs section]                   perf_event_attr (128 bytes) + ids section, per attr
//! [data section]                    records, appended in order
//! [feature section table]           {offset, size} per set feature bit, in bit order
//! [feature contents]
//! ```
//!
//! Use: build an [`AttrSpec`] per event, [`PerfDataWriter::new`] writes the
//! ids and attrs; append records with [`PerfDataWriter::write_records`]
//! (raw bytes, e.g. straight from a kernel ring buffer) or the helpers
//! ([`PerfDataWriter::sample_tracepoint`], [`PerfDataWriter::comm`],
//! [`PerfDataWriter::fork`], [`PerfDataWriter::finished_round`]); then
//! [`PerfDataWriter::finish`] writes the feature sections and patches the
//! header. Tracing data (the tracefs format files) is built with
//! [`TracingData::to_bytes`].
//!
//! After a write error the writer refuses further records; `finish` then
//! keeps the data section up to the last complete record that reached the
//! file, so the result is still a valid perf.data file.

use crate::abi::{self, put_string, RecordType};
use crate::attr::{EventAttr, ATTR_SIZE, FILE_ATTR_SIZE};
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Buffer size for small records.
const BUF_CAP: usize = 1 << 20;

/// One event of the file: its attr, its name (`sched:sched_switch`) and the
/// sample ids the kernel gave its fds (one per CPU; any unique non-zero u64
/// for synthetic files).
#[derive(Clone, Debug)]
pub struct AttrSpec {
    /// The attr.
    pub attr: EventAttr,
    /// Event name as perf prints it.
    pub name: String,
    /// Sample ids (PERF_SAMPLE_IDENTIFIER values) belonging to this event.
    pub ids: Vec<u64>,
}

/// Tracing data (HEADER_TRACING_DATA), laid out exactly as
/// tools/perf/util/trace-event-info.c writes it (version 0.6).
#[derive(Clone, Debug, Default)]
pub struct TracingData {
    /// Page size of the recording machine.
    pub page_size: u32,
    /// Contents of events/header_page.
    pub header_page: Vec<u8>,
    /// Contents of events/header_event.
    pub header_event: Vec<u8>,
    /// Format files of the `ftrace` system (usually none).
    pub ftrace_formats: Vec<Vec<u8>>,
    /// Per system (in file order): its name and the format files of the
    /// recorded events of that system.
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// Contents of /proc/kallsyms (may be empty).
    pub kallsyms: Vec<u8>,
    /// Contents of printk_formats (may be empty).
    pub printk_formats: Vec<u8>,
    /// Contents of saved_cmdlines (may be empty).
    pub saved_cmdlines: Vec<u8>,
}

impl TracingData {
    /// Add the format text of one event, grouping by system.
    pub fn add_event_format(&mut self, system: &str, format: Vec<u8>) {
        if system == "ftrace" {
            self.ftrace_formats.push(format);
            return;
        }
        match self.systems.iter_mut().find(|(s, _)| s == system) {
            Some((_, v)) => v.push(format),
            None => self.systems.push((system.to_string(), vec![format])),
        }
    }

    /// Serialize. Sizes that do not fit their field (kallsyms larger than
    /// 4 GiB) are an error.
    pub fn to_bytes(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(
            64 + self.header_page.len()
                + self.header_event.len()
                + self.kallsyms.len()
                + self.printk_formats.len()
                + self.saved_cmdlines.len()
                + self
                    .systems
                    .iter()
                    .flat_map(|(_, f)| f.iter().map(|x| x.len() + 8))
                    .sum::<usize>(),
        );
        out.extend_from_slice(&[23, 8, 68]);
        out.extend_from_slice(b"tracing");
        out.extend_from_slice(b"0.6\0");
        out.push(u8::from(cfg!(target_endian = "big")));
        out.push(std::mem::size_of::<std::ffi::c_long>() as u8);
        out.extend_from_slice(&self.page_size.to_ne_bytes());
        out.extend_from_slice(b"header_page\0");
        put_u64_blob(&mut out, &self.header_page);
        out.extend_from_slice(b"header_event\0");
        put_u64_blob(&mut out, &self.header_event);
        put_u32(&mut out, self.ftrace_formats.len(), "ftrace format count")?;
        for f in &self.ftrace_formats {
            put_u64_blob(&mut out, f);
        }
        put_u32(&mut out, self.systems.len(), "system count")?;
        for (sys, formats) in &self.systems {
            out.extend_from_slice(sys.as_bytes());
            out.push(0);
            put_u32(&mut out, formats.len(), "event count")?;
            for f in formats {
                put_u64_blob(&mut out, f);
            }
        }
        put_u32(&mut out, self.kallsyms.len(), "kallsyms size")?;
        out.extend_from_slice(&self.kallsyms);
        put_u32(&mut out, self.printk_formats.len(), "printk_formats size")?;
        out.extend_from_slice(&self.printk_formats);
        put_u64_blob(&mut out, &self.saved_cmdlines);
        Ok(out)
    }
}

fn put_u64_blob(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(&(data.len() as u64).to_ne_bytes());
    out.extend_from_slice(data);
}

fn put_u32(out: &mut Vec<u8>, v: usize, what: &str) -> io::Result<()> {
    let v = u32::try_from(v).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} {v} does not fit in 32 bits"),
        )
    })?;
    out.extend_from_slice(&v.to_ne_bytes());
    Ok(())
}

/// Contents of the feature sections written by [`PerfDataWriter::finish`].
/// `None`/empty fields are left out of the file.
#[derive(Clone, Debug, Default)]
pub struct Features {
    /// HEADER_TRACING_DATA bytes (see [`TracingData::to_bytes`]).
    pub tracing_data: Option<Vec<u8>>,
    /// A smaller HEADER_TRACING_DATA (e.g. without kallsyms) used instead of
    /// `tracing_data` when, after a write error, the full sections do not fit.
    pub compact_tracing_data: Option<Vec<u8>>,
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE.
    pub osrelease: Option<String>,
    /// HEADER_VERSION (perf version string; we write ours).
    pub version: Option<String>,
    /// HEADER_ARCH.
    pub arch: Option<String>,
    /// HEADER_NRCPUS: (available, online).
    pub nr_cpus: Option<(u32, u32)>,
    /// HEADER_CMDLINE: argv (`argv[0]` first).
    pub cmdline: Vec<String>,
    /// HEADER_CPU_TOPOLOGY (see [`crate::topology`]).
    pub cpu_topology: Option<crate::topology::CpuTopology>,
    /// HEADER_CLOCK_DATA (see [`crate::clock`]): the events' clock at a
    /// known time of day, so that readers can print wall-clock times.
    pub clock_data: Option<crate::clock::WallClock>,
    /// HEADER_CLOCKID: the events' clock resolution in ns, written beside
    /// `clock_data` as perf does.
    pub clockid_res_ns: Option<u64>,
    /// HEADER_EVENT_DESC is always written from the attrs.
    /// Extra sections at schedscope's own bits (>= `abi::feature::SCHEDSCOPE_FIRST`),
    /// as (bit, bytes).
    pub extra: Vec<(u32, Vec<u8>)>,
}

/// Where a finished file's parts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinishSummary {
    /// Byte offset of the data section.
    pub data_offset: u64,
    /// Size of the data section (whole records only).
    pub data_size: u64,
    /// Total file size.
    pub file_size: u64,
    /// Whether feature sections were written (false after a write error
    /// that also prevented them).
    pub features_written: bool,
}

/// Streaming perf.data writer over any seekable byte sink.
pub struct PerfDataWriter<W: Read + Write + Seek> {
    out: W,
    attrs: Vec<AttrSpec>,
    /// sample_type of the first attr: decides the sample_id trailer layout
    /// of non-sample records.
    id_sample_type: u64,
    data_offset: u64,
    /// Bytes of the data section that reached `out`.
    committed: u64,
    buf: Vec<u8>,
    failed: Option<io::ErrorKind>,
}

impl<W: Read + Write + Seek> PerfDataWriter<W> {
    /// Start a file: reserve the header, write ids and attrs. `attrs` must
    /// not be empty; all attrs should share the sample_id layout
    /// (TID/TIME/ID/STREAM_ID/CPU/IDENTIFIER bits), as perf requires.
    pub fn new(mut out: W, attrs: Vec<AttrSpec>) -> io::Result<Self> {
        let Some(first) = attrs.first() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "perf.data needs at least one event attr",
            ));
        };
        let id_sample_type = first.attr.sample_type;
        out.seek(SeekFrom::Start(0))?;
        let mut head = vec![0u8; abi::FILE_HEADER_SIZE as usize];
        let mut id_offsets = Vec::with_capacity(attrs.len());
        let mut off = abi::FILE_HEADER_SIZE;
        for a in &attrs {
            id_offsets.push(off);
            for id in &a.ids {
                head.extend_from_slice(&id.to_ne_bytes());
            }
            off += 8 * a.ids.len() as u64;
        }
        for (a, id_off) in attrs.iter().zip(&id_offsets) {
            head.extend_from_slice(&a.attr.to_bytes());
            head.extend_from_slice(&id_off.to_ne_bytes());
            head.extend_from_slice(&(8 * a.ids.len() as u64).to_ne_bytes());
        }
        // Header with zero data size for now: a crash before finish()
        // leaves a file that readers reject instead of misreading.
        let attrs_off = off;
        let attrs_size = (attrs.len() * FILE_ATTR_SIZE) as u64;
        let data_offset = attrs_off + attrs_size;
        let h = file_header(attrs_off, attrs_size, data_offset, 0, &[]);
        head[..h.len()].copy_from_slice(&h);
        out.write_all(&head)?;
        Ok(PerfDataWriter {
            out,
            attrs,
            id_sample_type,
            data_offset,
            committed: 0,
            buf: Vec::with_capacity(BUF_CAP),
            failed: None,
        })
    }

    /// The attrs this file describes.
    pub fn attrs(&self) -> &[AttrSpec] {
        &self.attrs
    }

    /// Bytes of the data section so far (including buffered records).
    pub fn data_size(&self) -> u64 {
        self.committed + self.buf.len() as u64
    }

    fn check(&self) -> io::Result<()> {
        match self.failed {
            Some(kind) => Err(io::Error::new(
                kind,
                "an earlier write to the perf.data file failed",
            )),
            None => Ok(()),
        }
    }

    /// Write everything to `out`, counting what reached it.
    fn raw_write(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            match self.out.write(data) {
                Ok(0) => {
                    self.failed = Some(io::ErrorKind::WriteZero);
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the perf.data file accepted no more bytes",
                    ));
                }
                Ok(n) => {
                    self.committed += n as u64;
                    data = &data[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.failed = Some(e.kind());
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Write buffered records to the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let r = self.raw_write(&buf);
        self.buf = buf;
        self.buf.clear();
        r
    }

    /// Append one or more complete records (each starting with a
    /// perf_event_header whose size covers it), e.g. bytes copied from a
    /// kernel ring buffer. Large slices bypass the internal buffer.
    pub fn write_records(&mut self, data: &[u8]) -> io::Result<()> {
        self.check()?;
        if self.buf.len() + data.len() <= BUF_CAP {
            self.buf.extend_from_slice(data);
            return Ok(());
        }
        self.flush()?;
        if data.len() >= BUF_CAP / 2 {
            self.raw_write(data)
        } else {
            self.buf.extend_from_slice(data);
            Ok(())
        }
    }

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

    /// Write the feature sections and patch the header.
    ///
    /// After a write error (disk full, ...) only bytes that already reached
    /// the sink are overwritten: the data section is cut back to the last
    /// complete record that leaves room for the feature sections (with
    /// [`Features::compact_tracing_data`] instead of the full tracing data,
    /// to keep as many records as possible; with no features if even those
    /// do not fit), so the file stays readable up to that record.
    pub fn finish(mut self, features: &Features) -> io::Result<(W, FinishSummary)> {
        let flushed = self.flush();
        let full = self.feature_sections(features, false)?;
        if flushed.is_ok() && self.failed.is_none() {
            let data_size = self.committed;
            if let Ok(end) = self.write_features(data_size, &full) {
                return self.write_header(data_size, &full, end);
            }
            self.failed = Some(io::ErrorKind::Other);
        }
        // Bytes of the data section known to be on the sink.
        let allocated = self.committed;
        let compact = self.feature_sections(features, true)?;
        let need = blob_len(&compact);
        if need <= allocated {
            let data_size = self.last_complete_record(allocated - need)?;
            if let Ok(end) = self.write_features(data_size, &compact) {
                return self.write_header(data_size, &compact, end);
            }
        }
        let data_size = self.last_complete_record(allocated)?;
        let end = self.data_offset + data_size;
        self.write_header(data_size, &[], end)
    }

    /// Write the section table and contents right after `data_size` bytes
    /// of data; returns the end offset.
    fn write_features(&mut self, data_size: u64, sections: &[(u32, Vec<u8>)]) -> io::Result<u64> {
        let data_end = self.data_offset + data_size;
        let table_len = 16 * sections.len() as u64;
        let mut blob = Vec::with_capacity(blob_len(sections) as usize);
        let mut off = data_end + table_len;
        for (_, bytes) in sections {
            put64(&mut blob, off);
            put64(&mut blob, bytes.len() as u64);
            off += bytes.len() as u64;
        }
        for (_, bytes) in sections {
            blob.extend_from_slice(bytes);
        }
        self.out.seek(SeekFrom::Start(data_end))?;
        self.out.write_all(&blob)?;
        Ok(off)
    }

    fn write_header(
        mut self,
        data_size: u64,
        sections: &[(u32, Vec<u8>)],
        file_size: u64,
    ) -> io::Result<(W, FinishSummary)> {
        let bits: Vec<u32> = sections.iter().map(|(b, _)| *b).collect();
        let attrs_size = (self.attrs.len() * FILE_ATTR_SIZE) as u64;
        let attrs_off = self.data_offset - attrs_size;
        let header = file_header(attrs_off, attrs_size, self.data_offset, data_size, &bits);
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&header)?;
        self.out.flush()?;
        Ok((
            self.out,
            FinishSummary {
                data_offset: self.data_offset,
                data_size,
                file_size,
                features_written: !sections.is_empty(),
            },
        ))
    }

    /// Walk the record headers of the data section and return the size of
    /// the prefix made of whole records within `limit` bytes.
    fn last_complete_record(&mut self, limit: u64) -> io::Result<u64> {
        self.out.seek(SeekFrom::Start(self.data_offset))?;
        let mut reader = io::BufReader::with_capacity(1 << 20, &mut self.out);
        let mut pos = 0u64;
        let mut hdr = [0u8; 8];
        loop {
            if pos + 8 > limit || reader.read_exact(&mut hdr).is_err() {
                return Ok(pos);
            }
            let size = u64::from(u16::from_ne_bytes([hdr[6], hdr[7]]));
            if size < 8 || pos + size > limit {
                return Ok(pos);
            }
            if reader.seek_relative(size as i64 - 8).is_err() {
                return Ok(pos);
            }
            pos += size;
        }
    }

    fn feature_sections(&self, f: &Features, compact: bool) -> io::Result<Vec<(u32, Vec<u8>)>> {
        use abi::feature as ft;
        let mut v: Vec<(u32, Vec<u8>)> = Vec::new();
        let td = if compact {
            f.compact_tracing_data.as_ref().or(f.tracing_data.as_ref())
        } else {
            f.tracing_data.as_ref()
        };
        if let Some(td) = td {
            v.push((ft::TRACING_DATA, td.clone()));
        }
        let mut string = |bit: u32, s: &Option<String>| {
            if let Some(s) = s {
                let mut b = Vec::new();
                put_string(&mut b, s);
                v.push((bit, b));
            }
        };
        string(ft::HOSTNAME, &f.hostname);
        string(ft::OSRELEASE, &f.osrelease);
        string(ft::VERSION, &f.version);
        string(ft::ARCH, &f.arch);
        if let Some((avail, online)) = f.nr_cpus {
            let mut b = Vec::new();
            put32(&mut b, avail);
            put32(&mut b, online);
            v.push((ft::NRCPUS, b));
        }
        if let Some(t) = &f.cpu_topology {
            v.push((ft::CPU_TOPOLOGY, crate::topology::encode_cpu_topology(t)));
        }
        if let Some(w) = &f.clock_data {
            v.push((ft::CLOCK_DATA, crate::clock::encode_clock_data(w)));
        }
        if let Some(res) = f.clockid_res_ns {
            let mut b = Vec::new();
            put64(&mut b, res);
            v.push((ft::CLOCKID, b));
        }
        if !f.cmdline.is_empty() {
            let mut b = Vec::new();
            put_u32(&mut b, f.cmdline.len(), "cmdline argument count")?;
            for a in &f.cmdline {
                put_string(&mut b, a);
            }
            v.push((ft::CMDLINE, b));
        }
        // EVENT_DESC: u32 nr, u32 attr size, then per event attr, u32
        // nr_ids, name string, ids.
        let mut b = Vec::new();
        put_u32(&mut b, self.attrs.len(), "event count")?;
        put32(&mut b, ATTR_SIZE as u32);
        for a in &self.attrs {
            b.extend_from_slice(&a.attr.to_bytes());
            put_u32(&mut b, a.ids.len(), "id count")?;
            put_string(&mut b, &a.name);
            for id in &a.ids {
                put64(&mut b, *id);
            }
        }
        v.push((ft::EVENT_DESC, b));
        for (bit, bytes) in &f.extra {
            if *bit < ft::SCHEDSCOPE_FIRST || *bit >= ft::FEAT_BITS {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "extra feature bit {bit} is outside schedscope's range {}..{}",
                        ft::SCHEDSCOPE_FIRST,
                        ft::FEAT_BITS
                    ),
                ));
            }
            v.push((*bit, bytes.clone()));
        }
        v.sort_by_key(|(b, _)| *b);
        v.dedup_by_key(|(b, _)| *b);
        Ok(v)
    }
}

/// Bytes of a feature section table plus contents.
fn blob_len(sections: &[(u32, Vec<u8>)]) -> u64 {
    sections.iter().map(|(_, b)| 16 + b.len() as u64).sum()
}

/// The 104-byte perf_file_header.
fn file_header(
    attrs_off: u64,
    attrs_size: u64,
    data_off: u64,
    data_size: u64,
    features: &[u32],
) -> Vec<u8> {
    let mut h = Vec::with_capacity(abi::FILE_HEADER_SIZE as usize);
    h.extend_from_slice(abi::PERF_MAGIC2);
    put64(&mut h, abi::FILE_HEADER_SIZE);
    put64(&mut h, FILE_ATTR_SIZE as u64);
    put64(&mut h, attrs_off);
    put64(&mut h, attrs_size);
    put64(&mut h, data_off);
    put64(&mut h, data_size);
    put64(&mut h, 0); // event_types (unused)
    put64(&mut h, 0);
    let mut bitmap = [0u64; 4];
    for &bit in features {
        bitmap[(bit / 64) as usize] |= 1 << (bit % 64);
    }
    for w in bitmap {
        put64(&mut h, w);
    }
    h
}

fn put64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_ne_bytes());
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
    use super::*;
    use std::io::Cursor;

    fn u64_at(b: &[u8], off: usize) -> u64 {
        u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
    }

    fn spec(id: u64) -> AttrSpec {
        AttrSpec {
            attr: EventAttr::tracepoint(300 + id),
            name: format!("test:ev{id}"),
            ids: vec![id * 10, id * 10 + 1],
        }
    }

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

    #[test]
    fn layout_of_header_attrs_data_and_features() {
        let mut w = PerfDataWriter::new(Cursor::new(Vec::new()), vec![spec(1), spec(2)]).unwrap();
        w.comm(5, 6, "worker", 0).unwrap();
        w.sample_tracepoint(20, 5, 6, 1000, 1, &[1, 2, 3]).unwrap();
        w.finished_round().unwrap();
        let feats = Features {
            hostname: Some("host".into()),
            extra: vec![(abi::feature::SCHEDSCOPE_CGROUP_SAMPLES, vec![7; 8])],
            ..Features::default()
        };
        let (cur, sum) = w.finish(&feats).unwrap();
        let f = cur.into_inner();
        assert_eq!(&f[0..8], b"PERFILE2");
        assert_eq!(u64_at(&f, 8), 104);
        assert_eq!(u64_at(&f, 16), 144);
        // ids: 2 attrs x 2 ids right after the header.
        assert_eq!(u64_at(&f, 104), 10);
        assert_eq!(u64_at(&f, 128), 21);
        let attrs_off = u64_at(&f, 24) as usize;
        assert_eq!(attrs_off, 136);
        assert_eq!(u64_at(&f, 32), 288);
        // second attr's ids section points at its ids.
        assert_eq!(u64_at(&f, attrs_off + 144 + 128), 120);
        assert_eq!(u64_at(&f, attrs_off + 144 + 136), 16);
        let data_off = u64_at(&f, 40) as usize;
        let data_size = u64_at(&f, 48) as usize;
        assert_eq!(data_off as u64, sum.data_offset);
        // COMM: 8 hdr + 8 pid/tid + 8 name + 40-byte... trailer: tid 8,
        // time 8, cpu 8, identifier 8 = 56 bytes.
        let comm_size = u16::from_ne_bytes([f[data_off + 6], f[data_off + 7]]) as usize;
        assert_eq!(comm_size, 8 + 8 + 8 + 32);
        assert_eq!(&f[data_off + 16..data_off + 22], b"worker");
        let s = data_off + comm_size;
        assert_eq!(u32::from_ne_bytes(f[s..s + 4].try_into().unwrap()), 9);
        assert_eq!(u64_at(&f, s + 8), 20, "identifier first");
        assert_eq!(u64_at(&f, s + 8 + 24), 1000, "time after ip and tid");
        let sample_size = u16::from_ne_bytes([f[s + 6], f[s + 7]]) as usize;
        assert_eq!(sample_size % 8, 0);
        assert_eq!(data_size, comm_size + sample_size + 8);
        // feature bitmap: tracing data absent, hostname(3), event_desc(12), bit 200.
        let bm0 = u64_at(&f, 72);
        assert_eq!(bm0, (1 << 3) | (1 << 12));
        assert_eq!(u64_at(&f, 72 + 24), 1 << (200 - 192));
        let table = data_off + data_size;
        let host_off = u64_at(&f, table) as usize;
        assert_eq!(
            u32::from_ne_bytes(f[host_off..host_off + 4].try_into().unwrap()),
            64
        );
        assert_eq!(&f[host_off + 4..host_off + 8], b"host");
        let extra_off = u64_at(&f, table + 32) as usize;
        assert_eq!(u64_at(&f, table + 40), 8);
        assert_eq!(&f[extra_off..extra_off + 8], &[7; 8]);
        assert_eq!(sum.file_size as usize, f.len());
    }

    #[test]
    fn tracing_data_layout() {
        let mut td = TracingData {
            page_size: 4096,
            header_page: b"hp".to_vec(),
            header_event: b"he".to_vec(),
            kallsyms: b"k".to_vec(),
            ..TracingData::default()
        };
        td.add_event_format("sched", b"F1".to_vec());
        td.add_event_format("sched", b"F2".to_vec());
        let b = td.to_bytes().unwrap();
        assert_eq!(&b[0..10], b"\x17\x08\x44tracing");
        assert_eq!(&b[10..14], b"0.6\0");
        assert_eq!(b[14], 0);
        assert_eq!(b[15] as usize, std::mem::size_of::<std::ffi::c_long>());
        assert_eq!(&b[20..32], b"header_page\0");
        assert_eq!(u64_at(&b, 32), 2);
        let mut p = 42;
        assert_eq!(&b[p..p + 13], b"header_event\0");
        p += 13 + 8 + 2;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            0,
            "no ftrace formats"
        );
        p += 4;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            1,
            "one system"
        );
        p += 4;
        assert_eq!(&b[p..p + 6], b"sched\0");
        p += 6;
        assert_eq!(u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()), 2);
        p += 4 + 8 + 2 + 8 + 2;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            1,
            "kallsyms size"
        );
        p += 5;
        assert_eq!(
            u32::from_ne_bytes(b[p..p + 4].try_into().unwrap()),
            0,
            "printk size"
        );
        p += 4;
        assert_eq!(u64_at(&b, p), 0, "saved_cmdlines size");
        assert_eq!(b.len(), p + 8);
    }

    /// A sink that fails after `limit` bytes, like a full disk.
    struct Full {
        inner: Cursor<Vec<u8>>,
        limit: u64,
    }
    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let pos = self.inner.position();
            if pos >= self.limit {
                return Err(io::Error::other("disk full"));
            }
            let n = b.len().min((self.limit - pos) as usize);
            self.inner.write(&b[..n])
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Read for Full {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.inner.read(b)
        }
    }
    impl Seek for Full {
        fn seek(&mut self, p: SeekFrom) -> io::Result<u64> {
            self.inner.seek(p)
        }
    }

    #[test]
    fn write_error_makes_room_for_the_features_by_dropping_records() {
        let sink = Full {
            inner: Cursor::new(Vec::new()),
            limit: 424 + 100 * 56 + 20,
        };
        let mut w = PerfDataWriter::new(sink, vec![spec(1), spec(2)]).unwrap();
        for i in 0..100_000u32 {
            if w.comm(i, i, "x", 0).is_err() {
                break;
            }
        }
        let feats = Features {
            tracing_data: Some(vec![1; 4000]),
            compact_tracing_data: Some(vec![2; 64]),
            ..Features::default()
        };
        let (sink, sum) = w.finish(&feats).unwrap();
        assert!(sum.features_written);
        let f = sink.inner.into_inner();
        let data_size = u64_at(&f, 48) as usize;
        assert_eq!(data_size % 56, 0, "whole records only");
        assert!(
            data_size > 0 && data_size < 100 * 56,
            "some records dropped for room"
        );
        // The compact tracing data was used (the full one does not fit).
        let t = 424 + data_size;
        let (off, size) = (u64_at(&f, t) as usize, u64_at(&f, t + 8) as usize);
        assert_eq!(size, 64);
        assert_eq!(&f[off..off + 64], &[2u8; 64]);
        assert_eq!(
            u64_at(&f, 72),
            (1 << 1) | (1 << 12),
            "tracing data + event desc"
        );
        assert!(
            off + size <= 424 + 100 * 56 + 20,
            "nothing written past the full point"
        );
    }

    #[test]
    fn write_error_keeps_whole_records_only() {
        let sink = Full {
            inner: Cursor::new(Vec::new()),
            limit: 424 + 3 * 56 + 20,
        };
        let mut w = PerfDataWriter::new(sink, vec![spec(1), spec(2)]).unwrap();
        let mut err = None;
        for i in 0..100_000u32 {
            if let Err(e) = w.comm(i, i, "x", 0) {
                err = Some(e);
                break;
            }
        }
        assert!(err.is_some(), "the full sink must surface an error");
        assert!(w.comm(1, 1, "y", 0).is_err(), "no writes after a failure");
        let (sink, sum) = w.finish(&Features::default()).unwrap();
        assert_eq!(sum.data_size, 3 * 56, "cut back to the last whole record");
        assert!(!sum.features_written);
        let f = sink.inner.into_inner();
        assert_eq!(u64_at(&f, 48), 3 * 56);
        assert_eq!(
            u64_at(&f, 72),
            0,
            "no feature bits when features did not fit"
        );
    }
}
