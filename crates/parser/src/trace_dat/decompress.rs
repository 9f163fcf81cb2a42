//! Version 7's compressed blocks: whole sections (one block) and per-CPU
//! trace data (a count of chunks, each compressed on its own).
//!
//! Sizes come from the file, so none is trusted for an allocation: output
//! grows only as the decoder produces bytes, never beyond the size the block
//! declares, and never beyond [`MAX_RATIO`] times the compressed bytes
//! present (a bound no honest ring-buffer page reaches).

use std::io::Read;

/// The compression a version-7 file names in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// `none`: nothing is compressed.
    None,
    /// `zstd`.
    Zstd,
}

/// Largest accepted ratio of decompressed to compressed bytes. A page
/// holding one event and zero padding compresses to about 30 bytes of zstd
/// (ratio ~140 for 4 KiB pages); empty 64 KiB pages stay well below this.
pub const MAX_RATIO: u64 = 4096;

/// Decompress one block of `data` that declares `declared` bytes of output.
pub fn block(codec: Codec, data: &[u8], declared: u64) -> Result<Vec<u8>, String> {
    match codec {
        Codec::None => Ok(data.to_vec()),
        Codec::Zstd => {
            let limit = declared.min(
                (data.len() as u64)
                    .saturating_mul(MAX_RATIO)
                    .saturating_add(1 << 16),
            );
            let mut src = data;
            let dec = ruzstd::decoding::StreamingDecoder::new(&mut src)
                .map_err(|e| format!("zstd data is corrupt: {e}"))?;
            let mut out = Vec::with_capacity((limit as usize).min(data.len().saturating_mul(16)));
            dec.take(limit)
                .read_to_end(&mut out)
                .map_err(|e| format!("zstd data is corrupt: {e}"))?;
            if (out.len() as u64) < declared {
                return Err(format!(
                    "zstd data gives {} bytes, {declared} were declared",
                    out.len()
                ));
            }
            Ok(out)
        }
    }
}

/// Decompress a CPU's chunked trace data. On damage, the chunks decoded
/// before it and the reason.
pub fn chunks(codec: Codec, raw: &[u8]) -> Result<Vec<u8>, (Vec<u8>, String)> {
    let mut out = Vec::new();
    let Some(count) = le32(raw, 0) else {
        return Err((out, "the chunk count is missing".into()));
    };
    let mut pos = 4usize;
    for n in 0..count {
        let (Some(csize), Some(usize_)) = (le32(raw, pos), le32(raw, pos + 4)) else {
            return Err((
                out,
                format!("chunk {n} of {count} is truncated at its header (byte {pos} of the data)"),
            ));
        };
        let start = pos + 8;
        let Some(data) = raw.get(start..start.saturating_add(csize as usize)) else {
            return Err((
                out,
                format!(
                    "chunk {n} of {count} declares {csize} compressed bytes but only {} are present",
                    raw.len().saturating_sub(start)
                ),
            ));
        };
        match block(codec, data, usize_ as u64) {
            Ok(b) => out.extend_from_slice(&b),
            Err(e) => {
                return Err((
                    out,
                    format!("chunk {n} of {count} (byte {pos} of the data): {e}"),
                ))
            }
        }
        pos = start + csize as usize;
    }
    Ok(out)
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
