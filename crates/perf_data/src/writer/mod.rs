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
//!
//! This module holds the writer, its buffering and the file header;
//! `records` the records it synthesizes, `features` the feature sections,
//! `finish` the end of a file (and the cut back after a write error),
//! `tracing_data` the HEADER_TRACING_DATA layout.

mod features;
mod finish;
mod records;
mod tracing_data;

pub use features::Features;
pub use finish::FinishSummary;
pub use tracing_data::TracingData;

use crate::abi;
use crate::attr::{EventAttr, FILE_ATTR_SIZE};
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

/// Append `v` as a u32, or fail naming `what` when it does not fit.
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    pub(super) fn u64_at(b: &[u8], off: usize) -> u64 {
        u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
    }

    pub(super) fn spec(id: u64) -> AttrSpec {
        AttrSpec {
            attr: EventAttr::tracepoint(300 + id),
            name: format!("test:ev{id}"),
            ids: vec![id * 10, id * 10 + 1],
        }
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
}
