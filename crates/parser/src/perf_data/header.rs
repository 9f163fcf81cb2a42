//! The perf.data file header, the attribute table and the feature sections.

use super::abi::{self, feature, ATTR_FLAG_SAMPLE_ID_ALL, FILE_HEADER_SIZE};
use super::bytes::{u32_at, u64_at, Cursor};
use crate::ParseError;

/// `struct perf_file_section`: where a table lives in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// Byte offset from the start of the file.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

impl Section {
    fn read(b: &[u8], off: usize) -> Option<Section> {
        Some(Section {
            offset: u64_at(b, off)?,
            size: u64_at(b, off + 8)?,
        })
    }

    /// The bytes of the section, if it lies inside `data`.
    pub fn slice<'a>(&self, data: &'a [u8]) -> Option<&'a [u8]> {
        let start = usize::try_from(self.offset).ok()?;
        let end = start.checked_add(usize::try_from(self.size).ok()?)?;
        data.get(start..end)
    }
}

/// `struct perf_file_header`.
#[derive(Clone, Debug)]
pub struct FileHeader {
    /// Size of one attr entry (perf_event_attr + ids section).
    pub attr_size: u64,
    /// The attribute table.
    pub attrs: Section,
    /// The record stream.
    pub data: Section,
    /// The feature bitmap (HEADER_FEAT_BITS bits).
    pub features: [u64; 4],
}

/// Why a simpleperf file is refused, and what to do instead.
pub const SIMPLEPERF: &str = "a perf.data written by Android's simpleperf, which schedscope does not read (simpleperf stores its records, tracepoint formats included, in a layout of its own): print it as perf-script-style text with simpleperf's `report_sample.py -i FILE --show_tracing_data > FILE.txt` and give that text, or record the scheduler on the device with ftrace (`atrace`/systrace, or /sys/kernel/tracing/trace) or Linux perf (`perf record -a -e sched:sched_switch,sched:sched_wakeup`)";

/// simpleperf's own feature bits (`FEAT_FILE` = 128 to `FEAT_INIT_MAP` =
/// 134 in its record_file_format.md; Linux perf's end far below 128) and
/// record types (`SIMPLE_PERF_RECORD_KERNEL_SYMBOL` = 32769 to
/// `SIMPLE_PERF_RECORD_TRACING_DATA` = 32777 in its record.h).
const SIMPLEPERF_FEATURES: std::ops::RangeInclusive<u32> = 128..=134;
const SIMPLEPERF_RECORDS: std::ops::RangeInclusive<u32> = 32769..=32777;

/// Whether the file is simpleperf's: one of its feature bits is set, or its
/// data section starts with one of its record types.
fn is_simpleperf(data: &[u8], h: &FileHeader) -> bool {
    let first_record = usize::try_from(h.data.offset)
        .ok()
        .and_then(|o| data.get(o..o.checked_add(4)?))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    SIMPLEPERF_FEATURES.clone().any(|b| h.has_feature(b))
        || (h.data.size >= 8 && first_record.is_some_and(|t| SIMPLEPERF_RECORDS.contains(&t)))
}

impl FileHeader {
    /// Parse and validate the 104-byte header.
    pub fn parse(name: &str, data: &[u8]) -> Result<FileHeader, ParseError> {
        if data.starts_with(abi::PERF_MAGIC2_SWAPPED) {
            return Err(ParseError::Corrupt {
                path: name.into(),
                offset: 0,
                detail: "big-endian perf.data (magic \"2ELIFREP\") is not supported".into(),
            });
        }
        if !data.starts_with(abi::PERF_MAGIC2) {
            return Err(ParseError::UnknownFormat {
                path: name.into(),
                detail: format!(
                    "expected perf.data magic \"PERFILE2\" at byte offset 0, found {:02x?}",
                    &data[..data.len().min(8)]
                ),
            });
        }
        if (data.len() as u64) < FILE_HEADER_SIZE {
            return Err(ParseError::Truncated {
                path: name.into(),
                offset: data.len() as u64,
                expected: format!("the {FILE_HEADER_SIZE}-byte perf.data file header"),
            });
        }
        let corrupt = |offset: u64, detail: String| ParseError::Corrupt {
            path: name.into(),
            offset,
            detail,
        };
        let size = u64_at(data, 8).unwrap_or(0);
        if size == 16 {
            return Err(corrupt(
                8,
                "pipe-mode perf.data (header size 16) is not supported: record to a file with -o"
                    .into(),
            ));
        }
        if size != FILE_HEADER_SIZE {
            return Err(corrupt(
                8,
                format!("header size {size}, expected {FILE_HEADER_SIZE}"),
            ));
        }
        let attr_size = u64_at(data, 16).unwrap_or(0);
        let mut features = [0u64; 4];
        for (i, f) in features.iter_mut().enumerate() {
            *f = u64_at(data, 72 + 8 * i).unwrap_or(0);
        }
        let h = FileHeader {
            attr_size,
            attrs: Section::read(data, 24).unwrap_or_default(),
            data: Section::read(data, 40).unwrap_or_default(),
            features,
        };
        if is_simpleperf(data, &h) {
            return Err(ParseError::Unsupported {
                path: name.into(),
                detail: SIMPLEPERF.into(),
            });
        }
        if h.attr_size < 64 + 16 || h.attr_size > 4096 {
            return Err(corrupt(
                16,
                format!(
                    "attr_size {} is not a plausible perf_event_attr size + 16",
                    h.attr_size
                ),
            ));
        }
        Ok(h)
    }

    /// Whether feature bit `bit` is set.
    pub fn has_feature(&self, bit: u32) -> bool {
        bit < feature::FEAT_BITS && self.features[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }
}

/// The parts of `struct perf_event_attr` the decoder uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    /// PERF_TYPE_*.
    pub type_: u32,
    /// Event config (the tracepoint id for tracepoints).
    pub config: u64,
    /// PERF_SAMPLE_* bits.
    pub sample_type: u64,
    /// PERF_FORMAT_* bits.
    pub read_format: u64,
    /// Whether non-sample records carry a sample_id trailer.
    pub sample_id_all: bool,
    /// branch_sample_type (for PERF_SAMPLE_BRANCH_STACK hw_idx).
    pub branch_sample_type: u64,
    /// sample_regs_user mask.
    pub sample_regs_user: u64,
    /// sample_regs_intr mask.
    pub sample_regs_intr: u64,
    /// The flag bits word (disabled, inherit, ..., exclude_user at bit 4,
    /// exclude_kernel 5, exclude_hv 6, precise_ip 15-16, exclude_host 19,
    /// exclude_guest 20), for naming events as perf does.
    pub flags: u64,
}

impl Attr {
    /// Parse the attr bytes (at least the 64-byte VER0 layout; later fields
    /// read as 0 when the attr is shorter).
    pub fn parse(b: &[u8]) -> Attr {
        let g = |off| u64_at(b, off).unwrap_or(0);
        Attr {
            type_: u32_at(b, 0).unwrap_or(0),
            config: g(8),
            sample_type: g(24),
            read_format: g(32),
            sample_id_all: g(40) & ATTR_FLAG_SAMPLE_ID_ALL != 0,
            branch_sample_type: g(72),
            sample_regs_user: g(80),
            sample_regs_intr: g(96),
            flags: g(40),
        }
    }
}

/// One entry of the attr table: the attr and the sample ids it owns.
#[derive(Clone, Debug, Default)]
pub struct AttrEntry {
    /// The attr.
    pub attr: Attr,
    /// Sample ids (one per CPU/thread fd).
    pub ids: Vec<u64>,
    /// Event name, from HEADER_EVENT_DESC (or derived).
    pub name: String,
}

/// Read the attr table.
pub fn read_attrs(name: &str, data: &[u8], h: &FileHeader) -> Result<Vec<AttrEntry>, ParseError> {
    let table = h.attrs.slice(data).ok_or_else(|| ParseError::Truncated {
        path: name.into(),
        offset: h.attrs.offset,
        expected: format!(
            "the attr table of {} bytes (file has {})",
            h.attrs.size,
            data.len()
        ),
    })?;
    let n = h.attrs.size / h.attr_size;
    if n == 0 {
        return Err(ParseError::Corrupt {
            path: name.into(),
            offset: 24,
            detail: "the attr table is empty: no events were recorded".into(),
        });
    }
    let attr_len = (h.attr_size - 16) as usize;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        let at = i * h.attr_size as usize;
        let entry_off = h.attrs.offset + at as u64;
        let bytes =
            table
                .get(at..at + h.attr_size as usize)
                .ok_or_else(|| ParseError::Truncated {
                    path: name.into(),
                    offset: entry_off,
                    expected: format!("attr #{i}"),
                })?;
        let attr = Attr::parse(&bytes[..attr_len]);
        let ids_sec = Section::read(bytes, attr_len).unwrap_or_default();
        let ids_bytes = ids_sec.slice(data).ok_or_else(|| ParseError::Truncated {
            path: name.into(),
            offset: ids_sec.offset,
            expected: format!("{} bytes of sample ids of attr #{i}", ids_sec.size),
        })?;
        let ids = ids_bytes
            .chunks_exact(8)
            .filter_map(|c| u64_at(c, 0))
            .collect();
        out.push(AttrEntry {
            attr,
            ids,
            name: String::new(),
        });
    }
    Ok(out)
}

/// HEADER_COMPRESSED contents.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompressedInfo {
    /// Format version.
    pub version: u32,
    /// Compressor (1 = zstd).
    pub type_: u32,
    /// Compression level.
    pub level: u32,
    /// Achieved ratio.
    pub ratio: u32,
    /// Size of the mmap buffers (upper bound of one decompressed chunk).
    pub mmap_len: u32,
}

/// The feature sections the decoder reads, and problems met reading them.
#[derive(Debug, Default)]
pub struct Features<'a> {
    /// HEADER_TRACING_DATA raw bytes and their file offset.
    pub tracing_data: Option<(&'a [u8], u64)>,
    /// HEADER_HOSTNAME.
    pub hostname: Option<String>,
    /// HEADER_OSRELEASE.
    pub os_release: Option<String>,
    /// HEADER_ARCH.
    pub arch: Option<String>,
    /// HEADER_NRCPUS (online).
    pub nr_cpus_online: Option<u32>,
    /// HEADER_NRCPUS (available).
    pub nr_cpus_avail: Option<u32>,
    /// HEADER_CMDLINE joined by spaces.
    pub cmdline: Option<String>,
    /// HEADER_EVENT_DESC: (name, ids).
    pub event_desc: Vec<(String, Vec<u64>)>,
    /// HEADER_COMPRESSED.
    pub compressed: Option<CompressedInfo>,
    /// HEADER_CPU_TOPOLOGY section and its file offset.
    pub cpu_topology: Option<(&'a [u8], u64)>,
    /// HEADER_CLOCK_DATA (`perf record -k`): the wall-clock anchor.
    pub clock_data: Option<schedscope_trace::WallClock>,
    /// schedscope cgroup samples section and its file offset.
    pub cgroup_samples: Option<(&'a [u8], u64)>,
    /// schedscope task-cgroup membership section and its file offset.
    pub task_cgroups: Option<(&'a [u8], u64)>,
    /// Problems: (message) for unreadable sections.
    pub problems: Vec<String>,
}

/// Read the feature section table (after the data section) and the sections.
pub fn read_features<'a>(data: &'a [u8], h: &FileHeader) -> Features<'a> {
    let mut f = Features::default();
    let table_off = h.data.offset.saturating_add(h.data.size);
    let mut idx = 0usize;
    for bit in 0..feature::FEAT_BITS {
        if !h.has_feature(bit) {
            continue;
        }
        let at = table_off.saturating_add(16 * idx as u64);
        idx += 1;
        let sec = usize::try_from(at)
            .ok()
            .and_then(|a| Section::read(data, a));
        let Some(sec) = sec else {
            f.problems.push(format!(
                "feature section table entry for feature bit {bit} at byte offset {at} is past the end of the file"
            ));
            break;
        };
        let Some(bytes) = sec.slice(data) else {
            f.problems.push(format!(
                "feature bit {bit}: section at byte offset {} (size {}) is past the end of the file",
                sec.offset, sec.size
            ));
            continue;
        };
        read_feature(&mut f, bit, bytes, sec.offset);
    }
    f
}

/// Read one feature section (`bytes`, at byte offset `offset` of the
/// file or pipe) of feature bit `bit` into `f`. Shared by the file's
/// feature section table and pipe mode's PERF_RECORD_FEATURE records.
pub fn read_feature<'a>(f: &mut Features<'a>, bit: u32, bytes: &'a [u8], offset: u64) {
    let mut c = Cursor::new(bytes, offset);
    match bit {
        feature::TRACING_DATA => f.tracing_data = Some((bytes, offset)),
        feature::HOSTNAME => f.hostname = c.perf_str(),
        feature::OSRELEASE => f.os_release = c.perf_str(),
        feature::ARCH => f.arch = c.perf_str(),
        feature::NRCPUS => {
            f.nr_cpus_avail = c.u32();
            f.nr_cpus_online = c.u32();
        }
        feature::CMDLINE => {
            let n = c.u32().unwrap_or(0);
            let mut parts = Vec::new();
            for _ in 0..n {
                match c.perf_str() {
                    Some(s) => parts.push(s),
                    None => break,
                }
            }
            f.cmdline = Some(parts.join(" "));
        }
        feature::EVENT_DESC if read_event_desc(&mut c, &mut f.event_desc).is_none() => {
            f.problems.push(format!(
                "HEADER_EVENT_DESC at byte offset {} is truncated at byte offset {}",
                offset,
                c.offset()
            ));
        }
        feature::COMPRESSED => {
            f.compressed = (|| {
                Some(CompressedInfo {
                    version: c.u32()?,
                    type_: c.u32()?,
                    level: c.u32()?,
                    ratio: c.u32()?,
                    mmap_len: c.u32()?,
                })
            })();
        }
        feature::CPU_TOPOLOGY => f.cpu_topology = Some((bytes, offset)),
        feature::CLOCK_DATA => {
            f.clock_data = schedscope_perf_data::clock::decode_clock_data(bytes);
        }
        feature::SCHEDSCOPE_CGROUP_SAMPLES => f.cgroup_samples = Some((bytes, offset)),
        feature::SCHEDSCOPE_TASK_CGROUPS => f.task_cgroups = Some((bytes, offset)),
        _ => {}
    }
}

fn read_event_desc(c: &mut Cursor<'_>, out: &mut Vec<(String, Vec<u64>)>) -> Option<()> {
    let n = c.u32()?;
    let attr_size = c.u32()? as usize;
    for _ in 0..n {
        c.bytes(attr_size)?;
        let nr_ids = c.u32()? as usize;
        let name = c.perf_str()?;
        if nr_ids > c.remaining() / 8 {
            return None;
        }
        let ids = (0..nr_ids).filter_map(|_| c.u64()).collect();
        out.push((name, ids));
    }
    Some(())
}
