//! Bounds-checked little-endian reads on untrusted bytes.

/// Little-endian u16 at `off`, if in bounds.
#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

/// Little-endian u32 at `off`, if in bounds.
#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Little-endian u64 at `off`, if in bounds.
#[inline]
pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(8)?)?;
    Some(u64::from_le_bytes([
        s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
    ]))
}

/// A forward cursor over a byte slice that remembers the absolute file
/// offset of its start, so that errors can name the byte offset.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    /// The bytes.
    pub data: &'a [u8],
    /// Position in `data`.
    pub pos: usize,
    /// File offset of `data[0]`.
    pub base: u64,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8], base: u64) -> Self {
        Cursor { data, pos: 0, base }
    }
    /// Absolute file offset of the current position.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let v = u32_at(self.data, self.pos)?;
        self.pos += 4;
        Some(v)
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let v = u64_at(self.data, self.pos)?;
        self.pos += 8;
        Some(v)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        let v = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    /// A NUL-terminated string (the NUL is consumed).
    pub(crate) fn cstr(&mut self) -> Option<&'a [u8]> {
        let rest = self.data.get(self.pos..)?;
        let n = rest.iter().position(|&c| c == 0)?;
        self.pos += n + 1;
        Some(&rest[..n])
    }
    /// A perf header string: u32 length, then that many bytes, NUL padded.
    pub(crate) fn perf_str(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        let b = self.bytes(len)?;
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

/// Bytes up to the first NUL.
#[inline]
pub(crate) fn until_nul(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}
