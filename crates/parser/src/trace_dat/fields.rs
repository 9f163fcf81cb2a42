//! The fields of events that have no typed decoder, kept as text (name,
//! value) in [`schedscope_trace::Trace::raw_args`], the way
//! `trace-cmd report -R` prints them: integers in decimal (signed when the
//! format says so), strings up to their NUL, other arrays as hex bytes.

use crate::tracefs_format::{EventFormat, FieldKind};

/// The non-common fields of `raw` as (name, value) text.
pub fn as_text(f: &EventFormat, raw: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(f.fields.len());
    for field in f.fields.iter().filter(|x| !x.name.starts_with("common_")) {
        let r = field.as_ref();
        let is_str = field.type_name.contains("char") && !matches!(field.kind, FieldKind::Scalar);
        let v = if is_str {
            r.read_str(raw)
                .map(|s| String::from_utf8_lossy(s).into_owned())
        } else if matches!(field.kind, FieldKind::Scalar) {
            if field.signed {
                r.read_i64(raw).map(|v| v.to_string())
            } else {
                r.read_u64(raw).map(|v| v.to_string())
            }
        } else {
            r.read_bytes(raw).map(|b| {
                let mut s = String::with_capacity(2 + 2 * b.len());
                s.push_str("0x");
                for x in b.iter().rev() {
                    s.push_str(&format!("{x:02x}"));
                }
                s
            })
        };
        // a field beyond the payload: left out (the event is still kept)
        if let Some(v) = v {
            out.push((field.name.clone(), v));
        }
    }
    out
}
