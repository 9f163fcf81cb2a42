//! The events under the cursor, for the detail pane: every field of each
//! event (its typed payload as the trace crate holds it), with interned
//! strings resolved and code addresses symbolized from the kallsyms stored
//! in the file, plus the first frames of its call chain.

use schedscope_trace::{Cpu, Event, StrId, Sym, Trace};

/// Frames of a call chain shown per event.
const FRAMES: usize = 3;

/// `Name(digits)` occurrences in `s`, replaced by `f(digits)`.
fn replace_ids(s: &str, name: &str, f: impl Fn(u64) -> String) -> String {
    let pat = format!("{name}(");
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(&pat) {
        // only whole identifiers (not e.g. "MaskId(" for "Id(")
        let whole = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_');
        let after = &rest[i + pat.len()..];
        let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
        let closed = after[digits.len()..].starts_with(')');
        out.push_str(&rest[..i]);
        match digits.parse::<u64>() {
            Ok(n) if whole && closed => {
                out.push_str(&f(n));
                rest = &after[digits.len() + 1..];
            }
            _ => {
                out.push_str(&pat);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// One event as a line: event name, current task, all payload fields
/// (strings resolved, symbols named), then the top of its call chain.
pub fn describe(trace: &Trace, ev: &Event) -> String {
    let data = format!("{:?}", ev.data);
    let data = replace_ids(&data, "StrId", |n| {
        format!("{:?}", trace.strings.get(StrId(n as u32)))
    });
    let data = replace_ids(&data, "Sym", |n| trace.sym_name(Sym(n)));
    let data = replace_ids(&data, "Tid", |n| n.to_string());
    let data = replace_ids(&data, "Cpu", |n| n.to_string());
    let mut s = format!(
        "{} {}[{}] {data}",
        trace.event_name(ev.name),
        trace.tasks.comm(ev.tid),
        ev.tid.0
    );
    if let Some(stack) = trace.stack(ev.stack) {
        let frames: Vec<String> = stack
            .iter()
            .take(FRAMES)
            .map(|&a| trace.sym_name(Sym(a)))
            .collect();
        s.push_str(&format!(" stack: {}", frames.join(" <- ")));
    }
    s
}

/// Events of `cpu` in `[a, b)`, at most `max`: (time, description).
pub fn at(trace: &Trace, cpu: u32, a: u64, b: u64, max: usize) -> Vec<(u64, String)> {
    let i = trace.events.partition_point(|e| e.ts.0 < a);
    trace.events[i..]
        .iter()
        .take_while(|e| e.ts.0 < b)
        .filter(|e| e.cpu == Cpu(cpu))
        .take(max)
        .map(|e| (e.ts.0, describe(trace, e)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_replaced_only_when_whole() {
        let s = "Switch { prev_tid: Tid(5), mask: MaskId(3), cpu: Cpu(1), x: Tid(q) }";
        let r = replace_ids(s, "Tid", |n| format!("<{n}>"));
        assert_eq!(
            r,
            "Switch { prev_tid: <5>, mask: MaskId(3), cpu: Cpu(1), x: Tid(q) }"
        );
        let r = replace_ids(&r, "Id", |n| format!("<{n}>"));
        assert_eq!(
            r,
            "Switch { prev_tid: <5>, mask: MaskId(3), cpu: Cpu(1), x: Tid(q) }"
        );
    }
}
