//! Line recognition: one chunk of the text parsed, line by line, into
//! borrowed event records (prefix and typed body) and the other lines'
//! facts (headers, loss markers, call-chain frames, anomalies).

use super::body::{self, Payload};
use super::other_lines::{classify_other, lost_line_cpu, Other};
use super::prefix::{self, Style};

/// One event line, parsed but not interned.
pub(super) struct LineEv<'a> {
    pub(super) comm: &'a str,
    pub(super) tid: i32,
    pub(super) tgid: Option<i32>,
    pub(super) cpu: Option<u32>,
    pub(super) ts: u64,
    pub(super) event: &'a str,
    /// The text after the event name (kept for untyped events' fields).
    pub(super) body: &'a str,
    /// None: untyped event or a body that did not parse (see `bad_body`).
    pub(super) payload: Option<Payload<'a>>,
    /// The body did not match the event's known form.
    pub(super) bad_body: bool,
    /// Call-chain frames (perf script `-g`): range in [`ChunkOut::frames`].
    pub(super) frames: std::ops::Range<u32>,
    /// 0-based line index within the chunk.
    pub(super) line: u32,
}

/// First occurrence and count of one kind of anomaly within a chunk.
#[derive(Default)]
pub(super) struct Tally<'a> {
    pub(super) count: u64,
    pub(super) first_line: u64,
    pub(super) first_text: &'a str,
}

impl<'a> Tally<'a> {
    fn add(&mut self, line: u64, text: &'a str) {
        if self.count == 0 {
            self.first_line = line;
            self.first_text = text;
        }
        self.count += 1;
    }
}

/// What one chunk yields.
#[derive(Default)]
pub(super) struct ChunkOut<'a> {
    pub(super) events: Vec<LineEv<'a>>,
    pub(super) lines: u64,
    pub(super) unparsed: Tally<'a>,
    pub(super) not_utf8: Tally<'a>,
    /// Events the ring buffer dropped (`[LOST N EVENTS]`, entries header).
    pub(super) lost: u64,
    /// `CPU:N [LOST K EVENTS]` lines: (events of the chunk before it, N, K).
    pub(super) loss_marks: Vec<(usize, u32, u64)>,
    /// CPU count from a header (`#P:N`, `cpus=N`).
    pub(super) nr_cpus: u32,
    /// Call-chain addresses of all events of the chunk, innermost first.
    pub(super) frames: Vec<u64>,
    /// Frames before the chunk's first event: they continue the previous
    /// chunk's last event.
    pub(super) leading_frames: std::ops::Range<u32>,
    /// Kernel symbols learnt from frames: (start address, name).
    pub(super) ksyms: Vec<(u64, &'a str)>,
}

/// Parse every line of a chunk.
pub(super) fn parse_chunk(chunk: &[u8], style: Style) -> ChunkOut<'_> {
    let mut out = ChunkOut::default();
    for (i, raw) in chunk.split(|&c| c == b'\n').enumerate() {
        out.lines = i as u64 + 1;
        let Ok(line) = std::str::from_utf8(raw) else {
            out.not_utf8.add(i as u64, "");
            continue;
        };
        let line = line.trim_end_matches('\r');
        if let Some(p) = prefix::parse(line, style) {
            let (system, bare) = match p.event.split_once(':') {
                Some((s, b)) => (s, b),
                None => (body::system_of(p.event).unwrap_or(""), p.event),
            };
            let (payload, bad_body) = match body::kind_of(system, bare) {
                Some(kind) => match body::parse(kind, p.body) {
                    Ok(pl) => (Some(pl), false),
                    Err(_) => (None, true),
                },
                None => (None, false),
            };
            out.events.push(LineEv {
                comm: p.comm,
                tid: p.tid,
                tgid: p.tgid,
                cpu: p.cpu,
                ts: p.ts,
                event: p.event,
                body: p.body,
                payload,
                bad_body,
                frames: out.frames.len() as u32..out.frames.len() as u32,
                line: i as u32,
            });
            continue;
        }
        match classify_other(line) {
            Other::Ignore => {}
            Other::Frame { addr, sym } => {
                out.frames.push(addr);
                let end = out.frames.len() as u32;
                match out.events.last_mut() {
                    Some(e) => e.frames.end = end,
                    // Before the first event every frame is a leading one.
                    None => out.leading_frames = 0..end,
                }
                if let Some(k) = sym {
                    if out.ksyms.last() != Some(&k) {
                        out.ksyms.push(k);
                    }
                }
            }
            Other::Lost(n) => {
                out.lost = out.lost.saturating_add(n);
                if let Some(cpu) = lost_line_cpu(line) {
                    out.loss_marks.push((out.events.len(), cpu, n));
                }
            }
            Other::Cpus(n) => out.nr_cpus = out.nr_cpus.max(n),
            Other::Entries {
                in_buffer,
                written,
                cpus,
            } => {
                out.lost = out.lost.saturating_add(written.saturating_sub(in_buffer));
                out.nr_cpus = out.nr_cpus.max(cpus);
            }
            Other::Unparsed => out.unparsed.add(i as u64, line),
        }
    }
    // A chunk ending in '\n' yields one empty trailing piece: not a line.
    if chunk.last() == Some(&b'\n') {
        out.lines = out.lines.saturating_sub(1);
    }
    out
}
