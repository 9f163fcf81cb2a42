//! The walk over the record headers of a record stream: validates sizes,
//! finds the damage point if any, collects the PERF_RECORD_COMPRESSED
//! payloads and cuts the stream into chunks at record boundaries (it can
//! stop and resume, so that the chunks walked so far are decoded while it
//! goes on); and the decompression of the collected zstd payloads.

use super::abi::RecordType;
use super::bytes::{u16_at, u32_at, u64_at};
use super::hash::DenseMap;
use super::CHUNK_BYTES;
use std::io::Read;
use std::ops::Range;

/// Result of the header walk over one record stream.
pub(super) struct Walk<'a> {
    /// Chunk byte ranges and the number of SAMPLE records in each.
    pub(super) chunks: Vec<(Range<usize>, usize)>,
    pub(super) compressed: Vec<&'a [u8]>,
    /// (byte offset, message, bytes skipped).
    pub(super) damage: Option<(u64, String, u64)>,
}

/// Walk record headers: validate sizes, cut chunks, collect compressed payloads.
/// `what` is "" for the file or a description of a decompressed stream.
pub(super) fn walk<'a>(
    stream: &'a [u8],
    base: u64,
    what: &str,
    filter: Option<&SampleFilter<'_>>,
) -> Walk<'a> {
    let mut k = Walker::new(stream, base, what, filter);
    k.advance(stream.len());
    k.w
}

/// A header walk that can stop at a byte position and resume, so that the
/// chunks walked so far are decoded while the walk goes on.
pub(super) struct Walker<'a, 'w> {
    pub(super) stream: &'a [u8],
    pub(super) base: u64,
    pub(super) what: &'w str,
    /// Count only the samples this lets through (None: all).
    pub(super) filter: Option<&'w SampleFilter<'w>>,
    pub(super) pos: usize,
    pub(super) w: Walk<'a>,
}

/// Which SAMPLE records need a slot in a filtered load: those of kept
/// attrs (and those whose attr is unknown, which the decoder reports).
pub(super) struct SampleFilter<'c> {
    pub(super) id_pos: Option<usize>,
    pub(super) ids: &'c DenseMap,
    /// Per attr: its events are kept.
    pub(super) attr_keep: Vec<bool>,
}

impl SampleFilter<'_> {
    #[inline]
    pub(super) fn counts(&self, body: &[u8]) -> bool {
        let attr = match self.id_pos {
            None => Some(0),
            Some(p) => u64_at(body, p * 8).and_then(|id| self.ids.get(id)),
        };
        attr.and_then(|a| self.attr_keep.get(a as usize).copied())
            .unwrap_or(true)
    }
}

impl<'a, 'w> Walker<'a, 'w> {
    pub(super) fn new(
        stream: &'a [u8],
        base: u64,
        what: &'w str,
        filter: Option<&'w SampleFilter<'w>>,
    ) -> Self {
        Walker {
            stream,
            base,
            what,
            filter,
            pos: 0,
            w: Walk {
                chunks: Vec::new(),
                compressed: Vec::new(),
                damage: None,
            },
        }
    }

    /// Whether the whole stream was walked (or damage stopped the walk).
    pub(super) fn done(&self) -> bool {
        self.pos >= self.stream.len() || self.w.damage.is_some()
    }

    /// Walk the records that start before `until`; the records walked
    /// become chunks (the last one may be short).
    pub(super) fn advance(&mut self, until: usize) {
        let (stream, base, what) = (self.stream, self.base, self.what);
        let w = &mut self.w;
        let mut pos = self.pos;
        let mut chunk_start = pos;
        let mut samples = 0usize;
        let until = until.min(stream.len());
        while pos < until && w.damage.is_none() {
            // Each header's address depends on the size in the previous
            // one: ask for the memory a few records ahead, so that the
            // walk does not wait for every cache line in turn.
            if let Some(ahead) = stream.get(pos + PREFETCH_AHEAD) {
                schedscope_trace::mem::prefetch(ahead);
            }
            let off = base + pos as u64;
            let (Some(ty), Some(size)) = (u32_at(stream, pos), u16_at(stream, pos + 6)) else {
                w.damage = Some((
                    off,
                    format!(
                        "record header at byte offset {off}{what} is cut off by the end of the data ({} bytes left, 8 needed); skipped",
                        stream.len() - pos
                    ),
                    (stream.len() - pos) as u64,
                ));
                break;
            };
            let size = size as usize;
            if size < 8 || pos + size > stream.len() {
                let why = if size < 8 {
                    format!("has size {size} (< 8)")
                } else {
                    format!(
                        "of size {size} runs past the end of the data (at byte offset {}{what})",
                        base + stream.len() as u64
                    )
                };
                w.damage = Some((
                    off,
                    format!(
                        "record at byte offset {off}{what} {why}: the remaining {} bytes were skipped",
                        stream.len() - pos
                    ),
                    (stream.len() - pos) as u64,
                ));
                break;
            }
            if ty == RecordType::SAMPLE.0 {
                if self
                    .filter
                    .is_none_or(|f| f.counts(&stream[pos + 8..pos + size]))
                {
                    samples += 1;
                }
            } else if ty == RecordType::COMPRESSED.0 {
                w.compressed.push(&stream[pos + 8..pos + size]);
            } else if ty == RecordType::COMPRESSED2.0 {
                let n = u64_at(stream, pos + 8).unwrap_or(0);
                let end = (pos as u64 + 16).saturating_add(n);
                if end <= (pos + size) as u64 {
                    w.compressed.push(&stream[pos + 16..end as usize]);
                }
            }
            pos += size;
            if pos - chunk_start >= CHUNK_BYTES {
                w.chunks.push((chunk_start..pos, samples));
                chunk_start = pos;
                samples = 0;
            }
        }
        // (on damage, pos is the damaged record: the chunk ends before it)
        if pos > chunk_start {
            w.chunks.push((chunk_start..pos.min(stream.len()), samples));
        }
        self.pos = pos;
    }
}

/// How far ahead of the header it reads the walk prefetches.
const PREFETCH_AHEAD: usize = 2048;

/// Decompress the concatenated COMPRESSED payloads (a sequence of zstd
/// frames). Returns the data and a problem message when the stream is
/// corrupt (the data decoded before the damage is kept).
pub(super) fn decompress(payloads: &[&[u8]]) -> (Vec<u8>, Option<String>) {
    // perf compresses the whole session as ONE zstd frame that it flushes
    // (ZSTD_flushStream) after every record but never ends, so the frame has
    // no last block. Append an empty raw block marked "last" to end it;
    // flushed streams stop at a block boundary, so this is where it belongs.
    const END_BLOCK: [u8; 3] = [0x01, 0x00, 0x00];
    let total: usize = payloads.iter().map(|p| p.len()).sum();
    let mut input = Vec::with_capacity(total + END_BLOCK.len());
    for p in payloads {
        input.extend_from_slice(p);
    }
    input.extend_from_slice(&END_BLOCK);
    let total = input.len();
    // Real perf data compresses 3-20x; cap the output against zip bombs.
    let limit = (total as u64).saturating_mul(1000).saturating_add(1 << 20);
    let mut out = Vec::with_capacity(total.saturating_mul(6));
    let mut rest: &[u8] = &input;
    // (a properly ended frame leaves only our end block behind)
    while !rest.is_empty() && rest != END_BLOCK {
        let consumed_before = total - rest.len();
        let dec = ruzstd::decoding::StreamingDecoder::new(&mut rest);
        let mut dec = match dec {
            Ok(d) => d,
            Err(e) => {
                return (
                    out,
                    Some(format!(
                        "zstd data of PERF_RECORD_COMPRESSED is corrupt at compressed byte {consumed_before}: {e}"
                    )),
                )
            }
        };
        let room = limit.saturating_sub(out.len() as u64);
        if let Err(e) = (&mut dec).take(room).read_to_end(&mut out) {
            return (
                out,
                Some(format!(
                    "zstd data of PERF_RECORD_COMPRESSED is corrupt in the frame at compressed byte {consumed_before}: {e}"
                )),
            );
        }
        if out.len() as u64 >= limit {
            return (
                out,
                Some("decompressed PERF_RECORD_COMPRESSED data exceeds 1000x its compressed size; stopped".into()),
            );
        }
    }
    (out, None)
}
