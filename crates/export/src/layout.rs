//! Where a trace's tables go: host, date and run id of its hive partition,
//! and the `_schedscope/` documentation of the root.

use crate::error::ExportError;
use schedscope_trace::Trace;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// The partition values of one trace.
#[derive(Clone, Debug)]
pub struct Identity {
    /// Host name (decoded; percent-encoded in paths).
    pub host: String,
    /// `YYYY-MM-DD` (UTC) of the first event when the trace anchors its
    /// clock to wall time, else of the file's modification time.
    pub date: String,
    /// Run id: `r` and 12 hex digits of a hash of the file's identity (never
    /// numeric, so that engines keep the partition a string).
    pub run: String,
}

/// Percent-encode everything but `[A-Za-z0-9._-]`.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `YYYY-MM-DD` of a Unix time (UTC).
pub fn civil_date(unix_secs: u64) -> String {
    // Howard Hinnant's days -> civil algorithm.
    let z = (unix_secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The Unix time (ns) of the trace's first event, when the trace anchors
/// its clock to wall time (perf.data HEADER_CLOCK_DATA); `None` otherwise.
pub fn wall_clock_ns(trace: &Trace) -> Option<i64> {
    trace.meta.wall_clock?.tod_of(trace.start().0)
}

impl Identity {
    /// The identity of `trace`, read from `file`.
    pub fn of(trace: &Trace, file: &Path) -> Identity {
        let meta = std::fs::metadata(file).ok();
        let mtime = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .or_else(|| Some(std::time::SystemTime::now()))
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::fs::canonicalize(file)
            .unwrap_or_else(|_| file.to_path_buf())
            .hash(&mut h);
        meta.as_ref().map(|m| m.len()).hash(&mut h);
        mtime.hash(&mut h);
        trace.start().0.hash(&mut h);
        trace.end().0.hash(&mut h);
        trace.event_count().hash(&mut h);
        Identity {
            host: trace
                .meta
                .hostname
                .clone()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "unknown".into()),
            // The day of the first event when the trace anchors its clock
            // to wall time, else the file's modification day.
            date: civil_date(
                wall_clock_ns(trace)
                    .and_then(|ns| u64::try_from(ns / 1_000_000_000).ok())
                    .unwrap_or(mtime),
            ),
            run: format!("r{:012x}", h.finish() & 0xffff_ffff_ffff),
        }
    }

    /// `root/<table>/host=<h>/date=<d>/run=<id>`.
    pub fn partition(&self, root: &Path, table: &str) -> PathBuf {
        root.join(table)
            .join(format!("host={}", percent_encode(&self.host)))
            .join(format!("date={}", self.date))
            .join(format!("run={}", self.run))
    }
}

/// Write `root/_schedscope/README.md` and `schema.json` (the same content
/// for every export of this schema version).
pub fn write_docs(root: &Path) -> Result<(), ExportError> {
    let dir = root.join("_schedscope");
    std::fs::create_dir_all(&dir).map_err(|e| ExportError::io(&dir, e))?;
    for (name, text) in [
        ("README.md", crate::schema::readme()),
        ("schema.json", crate::schema::schema_json()),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| ExportError::io(&p, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_encoding() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(951_782_400), "2000-02-29");
        assert_eq!(civil_date(1_767_225_599), "2025-12-31");
        assert_eq!(percent_encode("a b/c=d"), "a%20b%2Fc%3Dd");
    }
}
