//! nom parser for tracefs `format` files
//! (`/sys/kernel/tracing/events/<system>/<event>/format`).
//!
//! A format file describes the binary layout of one tracepoint's raw record:
//!
//! ```text
//! name: sched_switch
//! ID: 372
//! format:
//!     field:unsigned short common_type;   offset:0;   size:2; signed:0;
//!     ...
//!     field:char prev_comm[16];   offset:8;   size:16;    signed:0;
//!
//! print fmt: "prev_comm=%s ...", REC->prev_comm, ...
//! ```
//!
//! [`parse_format`] turns that text into an [`EventFormat`]. Decoders then
//! resolve the fields they need once per event type ([`EventFormat::field_ref`])
//! and read every record through the resulting [`FieldRef`], which holds the
//! pre-computed offset, size and kind: no name lookups on the hot path.
//!
//! Raw records are read little-endian (the only byte order schedscope records
//! and reads).

use nom::{
    bytes::complete::{tag, take_till, take_while1},
    character::complete::{char as nchar, digit1, space0},
    combinator::{map_res, opt},
    sequence::{delimited, preceded, tuple},
    IResult,
};
use schedscope_trace::CpuMask;
use thiserror::Error;

/// Why a format file could not be parsed.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// A required line (`name:`, `ID:`, `format:`) is missing.
    #[error("missing `{0}` line")]
    Missing(&'static str),
    /// A line could not be parsed.
    #[error("line {line}: cannot parse {what}: {text:?}")]
    BadLine {
        /// 1-based line number within the format text.
        line: usize,
        /// What was expected.
        what: &'static str,
        /// The offending line (truncated to 120 bytes).
        text: String,
    },
}

/// How a field's bytes are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// A plain integer or pointer of `size` bytes.
    Scalar,
    /// A fixed array of `len` elements (`char comm[16]`, `unsigned long mask[1]`).
    Array {
        /// Number of elements (0 when the declaration does not give a number).
        len: u32,
    },
    /// `__data_loc T[] name`: a u32 whose low 16 bits are the offset of the
    /// data from the start of the record and high 16 bits its length.
    DataLoc,
    /// `__rel_loc T[] name`: like [`FieldKind::DataLoc`] but the offset is
    /// relative to the end of this 4-byte field.
    RelLoc,
}

/// One field of a tracepoint record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Field name (`prev_pid`).
    pub name: String,
    /// C type as declared, without the name and array suffix
    /// (`pid_t`, `char`, `__data_loc char[]`, `__data_loc cpumask_t`).
    pub type_name: String,
    /// Byte offset in the raw record.
    pub offset: u32,
    /// Size in bytes (for data_loc fields, the size of the u32 locator).
    pub size: u32,
    /// Whether the kernel declares the type signed.
    pub signed: bool,
    /// Layout kind.
    pub kind: FieldKind,
}

/// A parsed tracefs format file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Subsystem (`sched`), when known to the caller (format files do not
    /// name it; perf.data groups them by system). Empty otherwise.
    pub system: String,
    /// Event name (`sched_switch`).
    pub name: String,
    /// Tracepoint id (`common_type` of its records).
    pub id: u32,
    /// Common and event-specific fields, in file order.
    pub fields: Vec<Field>,
    /// The `print fmt:` text (everything after `print fmt: `).
    pub print_fmt: String,
}

/// A pre-resolved accessor for one field: offset, size and kind copied out of
/// the [`Field`] so that reading a record costs a bounds check and a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRef {
    /// Byte offset in the raw record.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Signed integer type.
    pub signed: bool,
    /// Layout kind.
    pub kind: FieldKind,
}

impl EventFormat {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// A pre-resolved accessor for the field called `name`.
    pub fn field_ref(&self, name: &str) -> Option<FieldRef> {
        self.field(name).map(Field::as_ref)
    }

    /// `system:name` (or just `name` when the system is unknown).
    pub fn full_name(&self) -> String {
        if self.system.is_empty() {
            self.name.clone()
        } else {
            format!("{}:{}", self.system, self.name)
        }
    }

    /// For sched_switch: the `{ value, "letters" }` entries of the
    /// `__print_flags(...)` list of `prev_state` in the print fmt (the
    /// kernel's own names for its state bits), in order; empty when the
    /// print fmt has no such list.
    pub fn prev_state_flags(&self) -> Vec<(u64, String)> {
        let Some(at) = self.print_fmt.find("__print_flags(") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in self.print_fmt[at..].split('{').skip(1) {
            let Some((body, _)) = entry.split_once('}') else {
                break;
            };
            let Some((num, name)) = body.split_once(',') else {
                break;
            };
            let Some(v) = parse_c_int(num.trim()) else {
                break;
            };
            out.push((v, name.trim().trim_matches('"').to_string()));
        }
        out
    }

    /// For sched_switch: the kernel's `TASK_REPORT_MAX` preemption marker,
    /// derived from the print fmt as the smallest power of two above the
    /// largest flag in the `__print_flags(...)` list of `prev_state`
    /// (0x100 on 6.x kernels, larger on older ones). `None` when the print
    /// fmt has no such list.
    pub fn preempt_marker(&self) -> Option<u64> {
        // the print fmt may name it outright: `REC->prev_state & 4096 ? "+"`
        // (kernels whose TASK_STATE_MAX lies above the largest listed flag)
        for (i, _) in self.print_fmt.match_indices("prev_state & ") {
            let rest = &self.print_fmt[i + "prev_state & ".len()..];
            if let Some((num, _)) = rest.split_once(" ?") {
                if let Some(m) = parse_c_int(num.trim()).filter(|m| m.is_power_of_two()) {
                    return Some(m);
                }
            }
        }
        let start = self.print_fmt.find("__print_flags(")? + "__print_flags(".len();
        // the argument list, up to the matching ')'
        let mut depth = 1usize;
        let mut end = self.print_fmt.len();
        for (i, c) in self.print_fmt[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let args = &self.print_fmt[start..end];
        let mut max = 0u64;
        for entry in args.split('{').skip(1) {
            let num = entry.split([',', '}']).next().unwrap_or("").trim();
            if let Some(v) = parse_c_int(num) {
                max = max.max(v);
            }
        }
        if max == 0 {
            return None;
        }
        // smallest power of two strictly above `max`
        Some(1u64.checked_shl(64 - max.leading_zeros()).unwrap_or(0)).filter(|&m| m != 0)
    }
}

/// Parse a C integer literal as the kernel prints them (`0x00000080`, `128`).
fn parse_c_int(s: &str) -> Option<u64> {
    let s = s.trim_end_matches(['U', 'L', 'u', 'l']);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

impl Field {
    /// A pre-resolved accessor for this field.
    pub fn as_ref(&self) -> FieldRef {
        FieldRef {
            offset: self.offset,
            size: self.size,
            signed: self.signed,
            kind: self.kind,
        }
    }
}

impl FieldRef {
    #[inline]
    fn bytes<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        let start = self.offset as usize;
        raw.get(start..start + self.size as usize)
    }

    /// The field as an unsigned integer (zero-extended; sizes 1, 2, 4, 8).
    #[inline]
    pub fn read_u64(&self, raw: &[u8]) -> Option<u64> {
        let b = self.bytes(raw)?;
        Some(match b.len() {
            1 => b[0] as u64,
            2 => u16::from_le_bytes([b[0], b[1]]) as u64,
            4 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
            8 => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            _ => return None,
        })
    }

    /// The field as a signed integer: sign-extended when the field is
    /// signed, zero-extended otherwise.
    #[inline]
    pub fn read_i64(&self, raw: &[u8]) -> Option<i64> {
        let v = self.read_u64(raw)?;
        if !self.signed {
            return Some(v as i64);
        }
        Some(match self.size {
            1 => v as u8 as i8 as i64,
            2 => v as u16 as i16 as i64,
            4 => v as u32 as i32 as i64,
            _ => v as i64,
        })
    }

    /// The bytes a `__data_loc`/`__rel_loc` field points at, or the field's
    /// own bytes for fixed fields.
    #[inline]
    pub fn read_bytes<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        match self.kind {
            FieldKind::Scalar | FieldKind::Array { .. } => self.bytes(raw),
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let loc = FieldRef {
                    size: 4,
                    kind: FieldKind::Scalar,
                    ..*self
                }
                .read_u64(raw)? as u32;
                let mut off = (loc & 0xffff) as usize;
                let len = (loc >> 16) as usize;
                if self.kind == FieldKind::RelLoc {
                    off += self.offset as usize + 4;
                }
                raw.get(off..off + len)
            }
        }
    }

    /// A string field (`char comm[16]` or `__data_loc char[]`): the bytes up
    /// to the first NUL.
    #[inline]
    pub fn read_str<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        let b = self.read_bytes(raw)?;
        let end = memchr_nul(b);
        Some(&b[..end])
    }

    /// A CPU mask (`__data_loc cpumask_t`, `unsigned long mask[N]`): an
    /// array of little-endian unsigned longs, bit `i` being CPU `i`. (On a
    /// little-endian host, pairs of 4-byte longs hold the same bits as one
    /// 8-byte long, so the long size does not matter.)
    pub fn read_cpumask(&self, raw: &[u8]) -> Option<CpuMask> {
        let b = self.read_bytes(raw)?;
        let mut words = Vec::with_capacity(b.len().div_ceil(8));
        for w in b.chunks(8) {
            let mut a = [0u8; 8];
            a[..w.len()].copy_from_slice(w);
            words.push(u64::from_le_bytes(a));
        }
        while words.last() == Some(&0) {
            words.pop();
        }
        Some(CpuMask { words })
    }
}

#[inline]
fn memchr_nul(b: &[u8]) -> usize {
    b.iter().position(|&c| c == 0).unwrap_or(b.len())
}

fn dec_u32(i: &str) -> IResult<&str, u32> {
    map_res(digit1, str::parse::<u32>)(i)
}

/// `field:<decl>;\toffset:N;\tsize:N;\tsigned:N;` (signed is absent on very old kernels).
#[allow(clippy::type_complexity)]
fn field_line(i: &str) -> IResult<&str, (&str, u32, u32, Option<u32>)> {
    let (i, _) = space0(i)?;
    let (i, decl) = delimited(tag("field:"), take_till(|c| c == ';'), nchar(';'))(i)?;
    let (i, offset) = preceded(tuple((space0, tag("offset:"))), dec_u32)(i)?;
    let (i, _) = nchar(';')(i)?;
    let (i, size) = preceded(tuple((space0, tag("size:"))), dec_u32)(i)?;
    let (i, _) = nchar(';')(i)?;
    let (i, signed) = opt(delimited(
        tuple((space0, tag("signed:"))),
        dec_u32,
        nchar(';'),
    ))(i)?;
    Ok((i, (decl, offset, size, signed)))
}

fn key_line<'a>(key: &'static str) -> impl FnMut(&'a str) -> IResult<&'a str, &'a str> {
    move |i| preceded(tuple((tag(key), space0)), take_while1(|_| true))(i)
}

/// Split a declaration like `char prev_comm[16]`, `__data_loc char[] name`
/// or `unsigned long mask[BITS]` into (type, name, array length).
fn split_decl(decl: &str) -> Option<(String, String, Option<u32>)> {
    let decl = decl.trim();
    let split = decl.rfind([' ', '\t', '*'])?;
    let (ty, name) = (decl[..=split].trim(), decl[split + 1..].trim());
    if name.is_empty() {
        return None;
    }
    let (name, len) = match name.find('[') {
        Some(b) => {
            let inner = name[b + 1..].trim_end_matches(']');
            (&name[..b], Some(parse_c_int(inner).unwrap_or(0) as u32))
        }
        None => (name, None),
    };
    Some((ty.to_string(), name.to_string(), len))
}

/// Parse a tracefs `format` file.
pub fn parse_format(text: &str) -> Result<EventFormat, FormatError> {
    let mut name = None;
    let mut id = None;
    let mut in_format = false;
    let mut fields = Vec::new();
    let mut print_fmt = String::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |what| FormatError::BadLine {
            line: n + 1,
            what,
            text: line.chars().take(120).collect(),
        };
        let trimmed = line.trim();
        if let Ok((_, v)) = key_line("name:")(line) {
            name = Some(v.trim().to_string());
        } else if let Ok((_, v)) = key_line("ID:")(line) {
            id = Some(v.trim().parse::<u32>().map_err(|_| bad("an event id"))?);
        } else if trimmed == "format:" {
            in_format = true;
        } else if let Some(rest) = line.strip_prefix("print fmt:") {
            print_fmt = rest.trim().to_string();
        } else if in_format && trimmed.starts_with("field:") {
            let (_, (decl, offset, size, signed)) =
                field_line(line).map_err(|_| bad("a field line"))?;
            let (type_name, fname, array) = split_decl(decl).ok_or_else(|| bad("a declaration"))?;
            let kind = if type_name.starts_with("__data_loc") {
                FieldKind::DataLoc
            } else if type_name.starts_with("__rel_loc") {
                FieldKind::RelLoc
            } else if let Some(len) = array {
                FieldKind::Array { len }
            } else {
                FieldKind::Scalar
            };
            fields.push(Field {
                name: fname,
                type_name,
                offset,
                size,
                signed: signed.unwrap_or(0) != 0,
                kind,
            });
        }
    }
    Ok(EventFormat {
        system: String::new(),
        name: name.ok_or(FormatError::Missing("name:"))?,
        id: id.ok_or(FormatError::Missing("ID:"))?,
        fields,
        print_fmt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // This kernel's sched_switch format, copied from tracefs (see fixtures/README.md).
    const SWITCH: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/formats/sched/sched_switch/format"
    ));

    /// sched_switch as printed by a 4.19 kernel (decimal flags, up to 2048).
    const SWITCH_4_19_FMT: &str = "print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) - 1), \"|\", { 0x0001, \"S\" }, { 0x0002, \"D\" }, { 0x0004, \"T\" }, { 0x0008, \"t\" }, { 0x0010, \"X\" }, { 0x0020, \"Z\" }, { 0x0040, \"P\" }, { 0x0080, \"I\" }) : \"R\", REC->prev_state & (((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) ? \"+\" : \"\",REC->next_comm, REC->next_pid, REC->next_prio";
    const SWITCH_4_4_FMT: &str = "print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state & (2048-1) ? __print_flags(REC->prev_state & (2048-1), \"|\", { 1, \"S\"} , { 2, \"D\" }, { 4, \"T\" }, { 8, \"t\" }, { 16, \"Z\" }, { 32, \"X\" }, { 64, \"x\" }, { 128, \"K\" }, { 256, \"W\" }, { 512, \"P\" }, { 1024, \"N\" }) : \"R\", REC->prev_state & 2048 ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio";

    // This kernel's ipi_send_cpumask format, copied from tracefs (see fixtures/README.md).
    const CPUMASK: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/formats/ipi/ipi_send_cpumask/format"
    ));

    #[test]
    fn parses_sched_switch() {
        let f = parse_format(SWITCH).unwrap();
        assert_eq!(f.name, "sched_switch");
        assert_eq!(f.id, 372);
        assert_eq!(f.fields.len(), 11);
        let c = f.field("prev_comm").unwrap();
        assert_eq!(c.type_name, "char");
        assert_eq!(c.kind, FieldKind::Array { len: 16 });
        assert_eq!((c.offset, c.size, c.signed), (8, 16, false));
        let s = f.field("prev_state").unwrap();
        assert_eq!(
            (s.type_name.as_str(), s.offset, s.size, s.signed),
            ("long", 32, 8, true)
        );
        assert!(f.print_fmt.starts_with("\"prev_comm=%s"));
        assert!(f.print_fmt.ends_with("REC->next_prio"));
    }

    #[test]
    fn prev_state_flags_from_print_fmt() {
        let mut f = parse_format(SWITCH).unwrap();
        f.print_fmt = SWITCH_4_4_FMT["print fmt: ".len()..].to_string();
        let flags = f.prev_state_flags();
        assert_eq!(flags.len(), 11);
        assert_eq!(flags[0], (1, "S".to_string()));
        assert_eq!(flags[6], (64, "x".to_string()));
        assert_eq!(flags[10], (1024, "N".to_string()));
        f.print_fmt = SWITCH_4_19_FMT["print fmt: ".len()..].to_string();
        let flags = f.prev_state_flags();
        assert_eq!(flags.len(), 8);
        assert_eq!(flags[4], (0x10, "X".to_string()));
        assert_eq!(flags[7], (0x80, "I".to_string()));
        f.print_fmt = "\"x=%d\", REC->x".into();
        assert!(f.prev_state_flags().is_empty());
    }

    #[test]
    fn preempt_marker_from_print_fmt() {
        let f = parse_format(SWITCH).unwrap();
        assert_eq!(f.preempt_marker(), Some(0x100));
        let mut old = f.clone();
        old.print_fmt = SWITCH_4_19_FMT["print fmt: ".len()..].to_string();
        assert_eq!(old.preempt_marker(), Some(0x100));
        old.print_fmt = SWITCH_4_4_FMT["print fmt: ".len()..].to_string();
        // 4.4: TASK_STATE_MAX = 2048 is the marker
        assert_eq!(old.preempt_marker(), Some(2048));
        // a 4.x kernel whose TASK_STATE_MAX (4096) is above its largest
        // flag (1024): the marker the print fmt names wins
        old.print_fmt = "\"prev_state=%s%s\", REC->prev_state & (4096-1) ? __print_flags(REC->prev_state & (4096-1), \"|\", { 1, \"S\"} , { 1024, \"N\" }) : \"R\", REC->prev_state & 4096 ? \"+\" : \"\"".into();
        assert_eq!(old.preempt_marker(), Some(4096));
        old.print_fmt = "\"x=%d\", REC->x".into();
        assert_eq!(old.preempt_marker(), None);
    }

    #[test]
    fn reads_fields_of_a_record() {
        let f = parse_format(SWITCH).unwrap();
        let mut raw = vec![0u8; 64];
        raw[0..2].copy_from_slice(&372u16.to_le_bytes());
        raw[4..8].copy_from_slice(&(-5i32).to_le_bytes());
        raw[8..13].copy_from_slice(b"bash\0");
        raw[24..28].copy_from_slice(&1234i32.to_le_bytes());
        raw[32..40].copy_from_slice(&0x101i64.to_le_bytes());
        raw[40..56].copy_from_slice(b"0123456789abcdef"); // no NUL: all 16 bytes
        let pid = f.field_ref("common_pid").unwrap();
        assert_eq!(pid.read_i64(&raw), Some(-5));
        assert_eq!(pid.read_u64(&raw), Some(0xffff_fffb));
        assert_eq!(
            f.field_ref("common_type").unwrap().read_u64(&raw),
            Some(372)
        );
        assert_eq!(
            f.field_ref("prev_comm").unwrap().read_str(&raw),
            Some(&b"bash"[..])
        );
        assert_eq!(
            f.field_ref("next_comm").unwrap().read_str(&raw),
            Some(&b"0123456789abcdef"[..])
        );
        assert_eq!(f.field_ref("prev_pid").unwrap().read_i64(&raw), Some(1234));
        assert_eq!(
            f.field_ref("prev_state").unwrap().read_u64(&raw),
            Some(0x101)
        );
        // a truncated record gives None, not a panic
        assert_eq!(f.field_ref("next_prio").unwrap().read_i64(&raw[..50]), None);
    }

    #[test]
    fn data_loc_cpumask_and_string() {
        let f = parse_format(CPUMASK).unwrap();
        let m = f.field("cpumask").unwrap();
        assert_eq!(m.kind, FieldKind::DataLoc);
        assert_eq!(m.type_name, "__data_loc cpumask_t");
        assert_eq!(f.field("callsite").unwrap().type_name, "void *");
        let mut raw = vec![0u8; 48];
        // mask of 16 bytes (two longs) at offset 32
        raw[8..12].copy_from_slice(&(32u32 | 16 << 16).to_le_bytes());
        raw[32..40].copy_from_slice(&0b1010u64.to_le_bytes());
        raw[40..48].copy_from_slice(&1u64.to_le_bytes());
        let mask = m.as_ref().read_cpumask(&raw).unwrap();
        assert_eq!(mask.iter().collect::<Vec<_>>(), vec![1, 3, 64]);
        // locator pointing past the end
        raw[8..12].copy_from_slice(&(40u32 | 16 << 16).to_le_bytes());
        assert_eq!(m.as_ref().read_cpumask(&raw), None);

        let text = "name: x\nID: 9\nformat:\n\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:__rel_loc char[] r;\toffset:12;\tsize:4;\tsigned:0;\n";
        let f = parse_format(text).unwrap();
        let mut raw = vec![0u8; 24];
        raw[8..12].copy_from_slice(&(16u32 | 4 << 16).to_le_bytes());
        raw[16..20].copy_from_slice(b"/ls\0");
        // rel_loc: offset relative to end of the field (12 + 4 = 16) -> 20
        raw[12..16].copy_from_slice(&(4u32 | 3 << 16).to_le_bytes());
        raw[20..23].copy_from_slice(b"abc");
        assert_eq!(
            f.field_ref("filename").unwrap().read_str(&raw),
            Some(&b"/ls"[..])
        );
        assert_eq!(f.field_ref("r").unwrap().read_str(&raw), Some(&b"abc"[..]));
    }

    #[test]
    fn old_kernel_without_signed_and_bad_input() {
        let text = "name: old\nID: 5\nformat:\n\tfield:int x;\toffset:8;\tsize:4;\n\tfield:unsigned long mask[4];\toffset:16;\tsize:32;\tsigned:0;\n\nprint fmt: \"x=%d\"\n";
        let f = parse_format(text).unwrap();
        assert!(!f.field("x").unwrap().signed);
        assert_eq!(f.field("mask").unwrap().kind, FieldKind::Array { len: 4 });
        assert_eq!(parse_format("ID: 3\n"), Err(FormatError::Missing("name:")));
        assert_eq!(parse_format("name: a\n"), Err(FormatError::Missing("ID:")));
        assert!(matches!(
            parse_format("name: a\nID: x\n"),
            Err(FormatError::BadLine { line: 2, .. })
        ));
        assert!(matches!(
            parse_format("name: a\nID: 1\nformat:\n\tfield:int x;\toffset:zz;\n"),
            Err(FormatError::BadLine { line: 4, .. })
        ));
    }
}
