//! Ending a file: the feature sections after the data, the header
//! patched, and after a write error the data cut back to whole records
//! that leave room for them.

use super::{file_header, put64, Features, PerfDataWriter};
use crate::attr::FILE_ATTR_SIZE;
use std::io::{self, Read, Seek, SeekFrom, Write};

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

impl<W: Read + Write + Seek> PerfDataWriter<W> {
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
}

/// Bytes of a feature section table plus contents.
fn blob_len(sections: &[(u32, Vec<u8>)]) -> u64 {
    sections.iter().map(|(_, b)| 16 + b.len() as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::tests::{spec, u64_at};
    use std::io::Cursor;

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
