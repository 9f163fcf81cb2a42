//! Where the fields of a SAMPLE record (and the sample_id trailer of other
//! records) lie, from the attr's sample_type and read_format, and reading
//! them: the tokenizer of the record stream.

use super::abi::{read_format, sample};
use super::bytes::{u32_at, u64_at};
use super::header::Attr;

/// The fields of a sample_id_all trailer, in their order.
const TRAILER: [u64; 6] = [
    sample::TID,
    sample::TIME,
    sample::ID,
    sample::STREAM_ID,
    sample::CPU,
    sample::IDENTIFIER,
];

/// Where a sample's fields are, per attr.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub sample_type: u64,
    pub read_format: u64,
    pub sample_id_all: bool,
    /// Field offsets when no variable-size part (READ, CALLCHAIN) comes
    /// before RAW, so that every field sits at a fixed offset.
    fixed: Option<Fixed>,
}

/// Byte offsets of the sample fields in a SAMPLE body of a fixed layout.
#[derive(Clone, Copy, Debug)]
struct Fixed {
    tid: Option<usize>,
    time: Option<usize>,
    cpu: Option<usize>,
    /// Offset of RAW's size word, or None without RAW.
    raw: Option<usize>,
    /// End of the fixed fields: shorter bodies are rejected.
    end: usize,
}

impl Layout {
    pub(crate) fn new(a: &Attr) -> Layout {
        let t = a.sample_type;
        let fixed = (t & (sample::READ | sample::CALLCHAIN) == 0).then(|| {
            let mut p = 0usize;
            let mut at = |bit: u64| {
                (t & bit != 0).then(|| {
                    p += 8;
                    p - 8
                })
            };
            at(sample::IDENTIFIER);
            at(sample::IP);
            let tid = at(sample::TID);
            let time = at(sample::TIME);
            at(sample::ADDR);
            at(sample::ID);
            at(sample::STREAM_ID);
            let cpu = at(sample::CPU);
            at(sample::PERIOD);
            Fixed {
                tid,
                time,
                cpu,
                raw: (t & sample::RAW != 0).then_some(p),
                end: p,
            }
        });
        Layout {
            sample_type: a.sample_type,
            read_format: a.read_format,
            sample_id_all: a.sample_id_all,
            fixed,
        }
    }

    /// perf's `id_pos`: u64 index of the sample id in a SAMPLE body.
    pub(crate) fn id_pos(&self) -> Option<usize> {
        let t = self.sample_type;
        if t & sample::IDENTIFIER != 0 {
            return Some(0);
        }
        if t & sample::ID == 0 {
            return None;
        }
        Some(
            [sample::IP, sample::TID, sample::TIME, sample::ADDR]
                .iter()
                .filter(|&&b| t & b != 0)
                .count(),
        )
    }

    /// perf's `is_pos`: u64 index, counted from the end, of the id in a
    /// sample_id_all trailer.
    pub(crate) fn is_pos(&self) -> Option<usize> {
        let t = self.sample_type;
        if t & sample::IDENTIFIER != 0 {
            return Some(1);
        }
        if t & sample::ID == 0 {
            return None;
        }
        Some(1 + (t & sample::CPU != 0) as usize + (t & sample::STREAM_ID != 0) as usize)
    }

    /// The smallest SAMPLE record (header included) with every field the
    /// sample_type names (a READ, CALLCHAIN or RAW part takes at least 8
    /// bytes); used to size the event vector, never to reject records.
    pub(crate) fn min_sample_size(&self) -> usize {
        let t = self.sample_type;
        let fixed = [
            sample::IDENTIFIER,
            sample::IP,
            sample::TID,
            sample::TIME,
            sample::ADDR,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::PERIOD,
            sample::READ,
            sample::CALLCHAIN,
            sample::RAW,
        ];
        8 + 8 * fixed.iter().filter(|&&b| t & b != 0).count()
    }

    /// Time in a sample_id_all trailer at the end of `body`.
    pub(crate) fn trailer_time(&self, body: &[u8]) -> Option<u64> {
        u64_at(body, self.trailer_pos(body, sample::TIME)?)
    }

    /// The CPU of a non-SAMPLE record's sample_id trailer, when
    /// sample_id_all and CPU are set and `body` is longer than `fixed`
    /// bytes of the record's own fields plus the trailer.
    pub(crate) fn trailer_cpu(&self, body: &[u8], fixed: usize) -> Option<u32> {
        let whole = TRAILER
            .iter()
            .filter(|&&b| self.sample_type & b != 0)
            .count();
        if body.len() < fixed + 8 * whole {
            return None;
        }
        u32_at(body, self.trailer_pos(body, sample::CPU)?)
    }

    /// Offset in `body` of field `bit` of its sample_id_all trailer (the
    /// last u64s of the body, in [`TRAILER`] order as set).
    fn trailer_pos(&self, body: &[u8], bit: u64) -> Option<usize> {
        let t = self.sample_type;
        if !self.sample_id_all || t & bit == 0 {
            return None;
        }
        let after = TRAILER
            .iter()
            .skip_while(|&&b| b != bit)
            .filter(|&&b| t & b != 0)
            .count();
        body.len().checked_sub(8 * after)
    }

    fn read_size(&self, body: &[u8], pos: usize) -> Option<usize> {
        let rf = self.read_format;
        let extra = 8
            * ((rf & read_format::TOTAL_TIME_ENABLED != 0) as usize
                + (rf & read_format::TOTAL_TIME_RUNNING != 0) as usize);
        let per =
            8 * (1 + (rf & read_format::ID != 0) as usize + (rf & read_format::LOST != 0) as usize);
        if rf & read_format::GROUP != 0 {
            let nr = usize::try_from(u64_at(body, pos)?).ok()?;
            nr.checked_mul(per)?.checked_add(8 + extra)
        } else {
            Some(per + extra)
        }
    }
}

/// The fields of a SAMPLE record the decoder uses.
#[derive(Default, Debug)]
pub(crate) struct Sample<'a> {
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: u64,
    pub cpu: Option<u32>,
    pub callchain: Option<&'a [u8]>,
    pub raw: Option<&'a [u8]>,
}

/// Parse a SAMPLE body (after the 8-byte header) by the attr's layout.
/// `None` if the body is shorter than the layout demands.
/// (Read once per sample from `chunk`, another module: inlined there.)
#[inline]
pub(crate) fn parse_sample<'a>(b: &'a [u8], l: &Layout) -> Option<Sample<'a>> {
    if let Some(f) = l.fixed {
        // the same checks as below, at precomputed offsets
        if b.len() < f.end {
            return None;
        }
        let mut s = Sample::default();
        if let Some(o) = f.tid {
            s.pid = Some(u32_at(b, o)? as i32);
            s.tid = Some(u32_at(b, o + 4)? as i32);
        }
        if let Some(o) = f.time {
            s.time = u64_at(b, o)?;
        }
        if let Some(o) = f.cpu {
            s.cpu = Some(u32_at(b, o)?);
        }
        if let Some(o) = f.raw {
            let size = u32_at(b, o)? as usize;
            s.raw = Some(b.get(o + 4..(o + 4).checked_add(size)?)?);
        }
        return Some(s);
    }
    let t = l.sample_type;
    let mut s = Sample::default();
    let mut p = 0usize;
    let skip = |p: &mut usize, bit: u64| {
        if t & bit != 0 {
            *p += 8;
        }
    };
    skip(&mut p, sample::IDENTIFIER);
    skip(&mut p, sample::IP);
    if t & sample::TID != 0 {
        s.pid = Some(u32_at(b, p)? as i32);
        s.tid = Some(u32_at(b, p + 4)? as i32);
        p += 8;
    }
    if t & sample::TIME != 0 {
        s.time = u64_at(b, p)?;
        p += 8;
    }
    skip(&mut p, sample::ADDR);
    skip(&mut p, sample::ID);
    skip(&mut p, sample::STREAM_ID);
    if t & sample::CPU != 0 {
        s.cpu = Some(u32_at(b, p)?);
        p += 8;
    }
    skip(&mut p, sample::PERIOD);
    if t & sample::READ != 0 {
        p = p.checked_add(l.read_size(b, p)?)?;
    }
    if t & sample::CALLCHAIN != 0 {
        let nr = usize::try_from(u64_at(b, p)?).ok()?;
        let len = nr.checked_mul(8)?;
        s.callchain = Some(b.get(p + 8..(p + 8).checked_add(len)?)?);
        p += 8 + len;
    }
    if t & sample::RAW != 0 {
        let size = u32_at(b, p)? as usize;
        s.raw = Some(b.get(p + 4..(p + 4).checked_add(size)?)?);
        // p += (4 + size) rounded to 8; nothing after RAW is used
    }
    if p > b.len() {
        return None;
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::super::abi::context;
    use super::*;

    fn layout(sample_type: u64, read_format: u64) -> Layout {
        Layout::new(&Attr {
            sample_type,
            read_format,
            sample_id_all: true,
            ..Attr::default()
        })
    }

    #[test]
    fn id_positions_follow_perf() {
        use sample::*;
        // perf_evsel__calc_id_pos / calc_is_pos
        assert_eq!(layout(IDENTIFIER | IP | TID, 0).id_pos(), Some(0));
        assert_eq!(layout(IP | TID | TIME | ID | CPU, 0).id_pos(), Some(3));
        assert_eq!(layout(IP | TID | TIME | ADDR | ID, 0).id_pos(), Some(4));
        assert_eq!(layout(IP | TID | TIME, 0).id_pos(), None);
        assert_eq!(layout(IDENTIFIER | TIME, 0).is_pos(), Some(1));
        assert_eq!(layout(TID | TIME | ID | CPU, 0).is_pos(), Some(2));
        assert_eq!(
            layout(TID | TIME | ID | STREAM_ID | CPU, 0).is_pos(),
            Some(3)
        );
    }

    #[test]
    fn sample_fields_by_layout() {
        use sample::*;
        let st = IP | TID | TIME | ID | CPU | PERIOD | READ | CALLCHAIN | RAW;
        let rf = read_format::GROUP | read_format::ID | read_format::LOST;
        let mut b = Vec::new();
        let p64 = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
        p64(&mut b, 0xffff_ffff_8100_0000); // ip
        b.extend_from_slice(&10u32.to_le_bytes()); // pid
        b.extend_from_slice(&11u32.to_le_bytes()); // tid
        p64(&mut b, 123_456); // time
        p64(&mut b, 77); // id
        b.extend_from_slice(&3u32.to_le_bytes()); // cpu
        b.extend_from_slice(&0u32.to_le_bytes());
        p64(&mut b, 1); // period
        p64(&mut b, 2); // read: nr
        for v in [5, 77, 0, 6, 78, 1] {
            p64(&mut b, v); // (value, id, lost) x2
        }
        p64(&mut b, 3); // callchain nr
        for v in [
            context::KERNEL,
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0020,
        ] {
            p64(&mut b, v);
        }
        b.extend_from_slice(&6u32.to_le_bytes()); // raw size
        b.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
        b.extend_from_slice(&[0, 0]); // padding to 8
        let l = layout(st, rf);
        let s = parse_sample(&b, &l).unwrap();
        assert_eq!(
            (s.pid, s.tid, s.time, s.cpu),
            (Some(10), Some(11), 123_456, Some(3))
        );
        assert_eq!(s.raw, Some(&[1u8, 2, 3, 4, 5, 6][..]));
        assert_eq!(s.callchain.map(|c| c.len()), Some(24));
        assert_eq!(u64_at(&b, l.id_pos().unwrap() * 8), Some(77));
        // every truncation is rejected, never a panic
        for cut in 0..b.len() - 2 {
            assert!(parse_sample(&b[..cut], &l).is_none(), "cut {cut}");
        }
        // a callchain count that would overflow
        let mut huge = b.clone();
        let cc = 8 * 13;
        huge[cc..cc + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_sample(&huge, &l).is_none());
    }

    #[test]
    fn trailer_time_of_non_sample_records() {
        use sample::*;
        let l = layout(IDENTIFIER | IP | TID | TIME | CPU | PERIOD | RAW, 0);
        // COMM body: pid, tid, "bash\0\0\0\0", then trailer TID TIME CPU IDENTIFIER
        let mut b = Vec::new();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(b"bash\0\0\0\0");
        b.extend_from_slice(&[0u8; 8]); // tid
        b.extend_from_slice(&999u64.to_le_bytes()); // time
        b.extend_from_slice(&[0u8; 8]); // cpu
        b.extend_from_slice(&5u64.to_le_bytes()); // identifier
        assert_eq!(l.trailer_time(&b), Some(999));
        assert_eq!(l.trailer_time(&b[..8]), None);
    }

    #[test]
    fn trailer_cpu_of_loss_records() {
        use sample::*;
        let l = layout(IDENTIFIER | IP | TID | TIME | CPU | PERIOD | RAW, 0);
        // LOST body: id, lost, then trailer TID TIME CPU(u32 cpu, u32 res) IDENTIFIER
        let mut b = Vec::new();
        b.extend_from_slice(&5u64.to_le_bytes());
        b.extend_from_slice(&100u64.to_le_bytes());
        b.extend_from_slice(&[0u8; 8]); // tid
        b.extend_from_slice(&999u64.to_le_bytes()); // time
        b.extend_from_slice(&3u32.to_le_bytes()); // cpu
        b.extend_from_slice(&0u32.to_le_bytes()); // res
        b.extend_from_slice(&5u64.to_le_bytes()); // identifier
        assert_eq!(l.trailer_cpu(&b, 16), Some(3));
        // Too short to hold the trailer after the record's own fields.
        assert_eq!(l.trailer_cpu(&b[..40], 16), None);
        // Without CPU in sample_type, or without sample_id_all: unknown.
        assert_eq!(layout(IDENTIFIER | TID | TIME, 0).trailer_cpu(&b, 16), None);
        let mut no_all = layout(IDENTIFIER | TID | TIME | CPU, 0);
        no_all.sample_id_all = false;
        assert_eq!(no_all.trailer_cpu(&b, 16), None);
    }
}
