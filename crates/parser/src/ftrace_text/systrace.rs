//! systrace HTML pages: the ftrace text inside their
//! `<script class="trace-data">` blocks, everything else blanked so that
//! line numbers stay those of the file.

/// A systrace HTML file with everything but its ftrace text blanked.
pub(super) struct SystraceHtml {
    /// The file with the page's lines (and JSON trace data) emptied, so
    /// that line numbers stay those of the file.
    pub(super) text: Vec<u8>,
    /// Non-blank lines of the page outside the trace-data blocks.
    pub(super) wrapper: u64,
    /// Lines of JSON trace data inside the blocks.
    pub(super) json: u64,
}

/// For a systrace HTML page (`<!DOCTYPE html` or `<html` first), keep
/// only the text of its `<script class="trace-data">` blocks; `None` for
/// other input.
pub(super) fn systrace_html(data: &[u8]) -> Option<SystraceHtml> {
    let start = data.iter().position(|c| !c.is_ascii_whitespace())?;
    let head = &data[start..data.len().min(start + 16)];
    let lower = head.to_ascii_lowercase();
    if !lower.starts_with(b"<!doctype html") && !lower.starts_with(b"<html") {
        return None;
    }
    let mut out = SystraceHtml {
        text: Vec::with_capacity(data.len()),
        wrapper: 0,
        json: 0,
    };
    let mut inside = false;
    for line in data.split_inclusive(|&c| c == b'\n') {
        let t = line.trim_ascii();
        let keep = if inside {
            if t.starts_with(b"</script") {
                inside = false;
                false
            } else if t.starts_with(b"{") || t.starts_with(b"[") {
                inside = !t.ends_with(b"</script>");
                out.json += 1;
                false
            } else {
                true
            }
        } else {
            let opens = t.starts_with(b"<script") && t.windows(10).any(|w| w == b"trace-data");
            inside = opens;
            out.wrapper += u64::from(!t.is_empty() && !opens);
            false
        };
        if keep {
            out.text.extend_from_slice(line);
        } else if line.ends_with(b"\n") {
            out.text.push(b'\n');
        }
    }
    Some(out)
}
