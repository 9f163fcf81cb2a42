//! The events under the cursor, for the detail pane: one line per event as
//! `perf script` prints it (the current task, the event name, then the
//! payload with the tracepoint's own field names, formatted by
//! [`schedscope_trace::display`], the formatter every printer of events
//! shares), plus the first frames of its call chain.

use schedscope_trace::{display, Cpu, Event, Sym, Trace};

/// Frames of a call chain shown per event.
const FRAMES: usize = 3;

/// One event as a line: `comm[tid] system:event: payload` (the current
/// task, the idle task as `swapper/CPU`), then the top of its call chain
/// (`stack: f <- g <- h`).
pub fn describe(trace: &Trace, ev: &Event) -> String {
    // tid 0 is each CPU's idle task, which the kernel names swapper/CPU
    let comm = match ev.tid.0 {
        0 => format!("swapper/{}", ev.cpu.0),
        _ => trace.tasks.comm(ev.tid).to_string(),
    };
    let mut s = format!(
        "{comm}[{}] {}: {}",
        ev.tid.0,
        trace.event_name(ev.name),
        display::payload(trace, ev)
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
