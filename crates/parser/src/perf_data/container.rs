//! The three shapes of perf.data the decoder reads, reduced to one:
//! the attrs, the feature sections and where the record stream lies.
//!
//! * A finished file (`perf record -o FILE`): the 104-byte header points
//!   at the attr table, the data section and, after it, the feature
//!   section table.
//! * An unfinished file: perf was killed before it wrote the header back,
//!   so the data size reads 0 and no feature section was written (the
//!   feature bits are set but the table after the "data section" is
//!   records). Its records run from the data offset to the end of the file.
//! * Pipe mode (`perf record -o -`): a 16-byte header, then records only;
//!   the attrs (PERF_RECORD_HEADER_ATTR), feature sections
//!   (PERF_RECORD_HEADER_FEATURE), the tracing data
//!   (PERF_RECORD_HEADER_TRACING_DATA, whose payload follows the record
//!   outside its size) and event names (PERF_RECORD_EVENT_UPDATE) come
//!   first, before the first event record.

use super::abi::{self, feature, RecordType};
use super::bytes::{u16_at, u32_at, u64_at, until_nul};
use super::header::{self, Attr, AttrEntry, Features, FileHeader};
use crate::ParseError;

/// Size of pipe mode's header (magic and size).
const PIPE_HEADER_SIZE: u64 = 16;

/// How the file was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A finished `perf record -o FILE` recording.
    File,
    /// A recording whose header was never written back (data size 0).
    Unfinished,
    /// `perf record -o -`.
    Pipe,
}

/// What the decoder needs from the file's header part.
pub(crate) struct Container<'a> {
    /// The attrs and their sample ids.
    pub attrs: Vec<AttrEntry>,
    /// The feature sections (none for an unfinished file).
    pub feats: Features<'a>,
    /// Byte offset of the record stream.
    pub data_start: u64,
    /// Byte offset where the record stream should end (past the end of the
    /// data when the file is truncated).
    pub data_end: u64,
    /// Byte offset of the attr table or first attr record (for messages).
    pub attrs_at: u64,
    /// How the file was written.
    pub shape: Shape,
}

/// Whether `data` starts like a pipe-mode perf.data stream.
pub(crate) fn is_pipe(data: &[u8]) -> bool {
    data.starts_with(abi::PERF_MAGIC2) && u64_at(data, 8) == Some(PIPE_HEADER_SIZE)
}

/// Read the header part of a perf.data file or pipe stream.
pub(crate) fn read<'a>(name: &str, data: &'a [u8]) -> Result<Container<'a>, ParseError> {
    if is_pipe(data) {
        return read_pipe(name, data);
    }
    let hdr = FileHeader::parse(name, data)?;
    let attrs = header::read_attrs(name, data, &hdr)?;
    // perf writes the header last: a data size of 0 with records after
    // the data offset is a recording that was killed.
    if hdr.data.size == 0 && (data.len() as u64) > hdr.data.offset && hdr.data.offset > 0 {
        return Ok(Container {
            attrs,
            feats: Features::default(),
            data_start: hdr.data.offset,
            data_end: data.len() as u64,
            attrs_at: hdr.attrs.offset,
            shape: Shape::Unfinished,
        });
    }
    Ok(Container {
        attrs,
        feats: header::read_features(data, &hdr),
        data_start: hdr.data.offset,
        data_end: hdr.data.offset.saturating_add(hdr.data.size),
        attrs_at: hdr.attrs.offset,
        shape: Shape::File,
    })
}

/// PERF_EVENT_UPDATE__NAME: an EVENT_UPDATE record that names an event.
const EVENT_UPDATE_NAME: u64 = 2;

/// Read pipe mode's header records, up to the first record of another
/// kind (where the record stream starts). Damage there ends the header
/// part; the record walk reports it.
fn read_pipe<'a>(name: &str, data: &'a [u8]) -> Result<Container<'a>, ParseError> {
    let mut attrs = Vec::new();
    let mut feats = Features::default();
    let mut pos = PIPE_HEADER_SIZE as usize;
    let mut attrs_at = None;
    while let (Some(ty), Some(size)) = (u32_at(data, pos), u16_at(data, pos + 6)) {
        let size = size as usize;
        let Some(body) = data.get(pos + 8..pos + size.max(8)) else {
            break;
        };
        if size < 8 {
            break;
        }
        let body_at = (pos + 8) as u64;
        match RecordType(ty) {
            RecordType::HEADER_ATTR => {
                // perf_event_attr (its own size at byte 4; 0: the 64-byte
                // first version), then the event's sample ids
                let attr_len = match u32_at(body, 4) {
                    Some(0) => 64,
                    Some(n) => n as usize,
                    None => break,
                };
                if attr_len < 64 || attr_len > body.len() {
                    feats.problems.push(format!(
                        "pipe-mode attr record at byte offset {pos} has an attr of {attr_len} bytes in a {}-byte record; skipped",
                        size
                    ));
                } else {
                    attrs_at.get_or_insert(pos as u64);
                    attrs.push(AttrEntry {
                        attr: Attr::parse(&body[..attr_len]),
                        ids: body[attr_len..]
                            .chunks_exact(8)
                            .filter_map(|c| u64_at(c, 0))
                            .collect(),
                        name: String::new(),
                    });
                }
            }
            RecordType::HEADER_FEATURE => {
                if let (Some(bit), Some(bytes)) = (u64_at(body, 0), body.get(8..)) {
                    if bit < u64::from(feature::FEAT_BITS)
                        && bit != u64::from(feature::TRACING_DATA)
                    {
                        header::read_feature(&mut feats, bit as u32, bytes, body_at + 8);
                    }
                }
            }
            RecordType::HEADER_TRACING_DATA => {
                // the tracing data follows the record, outside its size
                let n = u32_at(body, 0).unwrap_or(0) as usize;
                let start = pos + size;
                match data.get(start..start.saturating_add(n)) {
                    Some(td) => feats.tracing_data = Some((td, start as u64)),
                    None => {
                        feats.problems.push(format!(
                            "pipe-mode tracing data at byte offset {start} ({n} bytes) is cut off by the end of the data"
                        ));
                        pos = data.len();
                        break;
                    }
                }
                pos = start + n;
                continue;
            }
            RecordType::EVENT_UPDATE => {
                if let (Some(EVENT_UPDATE_NAME), Some(id), Some(n)) =
                    (u64_at(body, 0), u64_at(body, 8), body.get(16..))
                {
                    let n = String::from_utf8_lossy(until_nul(n)).into_owned();
                    feats.event_desc.push((n, vec![id]));
                }
            }
            RecordType::HEADER_EVENT_TYPE
            | RecordType::HEADER_BUILD_ID
            | RecordType::ID_INDEX
            | RecordType::THREAD_MAP
            | RecordType::CPU_MAP
            | RecordType::TIME_CONV
            | RecordType::STAT_CONFIG
            | RecordType::FINISHED_INIT
            | RecordType::FINISHED_ROUND => {}
            _ => break,
        }
        pos += size;
    }
    if attrs.is_empty() {
        return Err(ParseError::Corrupt {
            path: name.into(),
            offset: pos as u64,
            detail: "pipe-mode perf.data without an attr record (PERF_RECORD_HEADER_ATTR) before its first event record: no events were recorded, or the stream is damaged".into(),
        });
    }
    Ok(Container {
        attrs,
        feats,
        data_start: pos as u64,
        data_end: data.len() as u64,
        attrs_at: attrs_at.unwrap_or(PIPE_HEADER_SIZE),
        shape: Shape::Pipe,
    })
}
