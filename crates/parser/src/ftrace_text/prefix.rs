//! The per-line prefix: who, where, when and which event.
//!
//! Two shapes exist:
//!
//! * dash style (`/sys/kernel/tracing/trace`, `trace_pipe`, `trace-cmd
//!   report`): `  COMM-PID  [(  TGID)] [CPU] [FLAGS]  SECS.FRAC: EVENT: BODY`;
//!   the comm may hold spaces, dashes and slashes, so the pid is the number
//!   after the last dash before the CPU column.
//! * perf style (`perf script`): `  COMM  TID[/TID] [CPU]  SECS.FRAC:  SYS:EVENT: BODY`;
//!   with the `pid/tid` form the first number is the thread-group id.

/// The decoded prefix of one event line; strings borrow from the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prefix<'a> {
    /// Task name as printed (`<idle>`, `<...>` when unknown).
    pub comm: &'a str,
    /// Thread id (`common_pid`).
    pub tid: i32,
    /// Thread-group id, when the line has one.
    pub tgid: Option<i32>,
    /// CPU column; `None` for a perf script line printed without one
    /// (`perf script -F comm,pid,time,event,trace` of perf 3.x).
    pub cpu: Option<u32>,
    /// Timestamp in nanoseconds.
    pub ts: u64,
    /// Event name as printed (`sched_switch` or `sched:sched_switch`).
    pub event: &'a str,
    /// Everything after the event name, trimmed.
    pub body: &'a str,
}

/// Which prefix shape a file uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// `COMM-PID [CPU]` (ftrace, trace-cmd).
    Dash,
    /// `COMM PID[/TID] [CPU]` (perf script).
    Perf,
}

/// Find the CPU column `[digits]` followed by whitespace or the end; returns
/// (index of '[', index after ']', cpu).
fn cpu_column(line: &str) -> Option<(usize, usize, u32)> {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(off) = line[from..].find('[') {
        let open = from + off;
        let mut i = open + 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i > open + 1 && i < b.len() && b[i] == b']' && (i + 1 == b.len() || b[i + 1] == b' ') {
            let cpu = line[open + 1..i]
                .parse::<u32>()
                .ok()
                .filter(|&c| c <= super::body::MAX_CPU)?;
            return Some((open, i + 1, cpu));
        }
        from = open + 1;
    }
    None
}

/// Parse `SECS.FRAC` (1 to 9 fraction digits) or plain nanoseconds into ns.
pub(crate) fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = match s.split_once('.') {
        Some((a, b)) => (a, b),
        None => {
            return if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) {
                s.parse().ok()
            } else {
                None
            }
        }
    };
    if secs.is_empty()
        || frac.is_empty()
        || frac.len() > 9
        || !secs.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let s: u64 = secs.parse().ok()?;
    let f: u64 = frac.parse().ok()?;
    let scale = 10u64.pow(9 - frac.len() as u32);
    s.checked_mul(1_000_000_000)?.checked_add(f * scale)
}

/// Parse one event line in the given style.
pub(crate) fn parse(line: &str, style: Style) -> Option<Prefix<'_>> {
    let Some((open, after, cpu)) = cpu_column(line) else {
        return match style {
            Style::Perf => parse_perf_without_cpu(line),
            Style::Dash => None,
        };
    };
    let left = line[..open].trim_end();
    let (comm, tid, tgid) = match style {
        Style::Dash => task_dash(left)?,
        Style::Perf => task_perf(left)?,
    };
    let rest = line[after..].trim_start();
    after_cpu(comm, tid, tgid, Some(cpu), rest)
}

/// `COMM TID[/TID] SECS.FRAC: SYS:EVENT: BODY` (perf script without the
/// CPU column): the timestamp is the first token ending in `:` that parses
/// as one, and the task is everything before it.
fn parse_perf_without_cpu(line: &str) -> Option<Prefix<'_>> {
    let mut from = 0;
    while let Some(off) = line[from..].find(": ") {
        let colon = from + off;
        let start = line[..colon].rfind(' ')? + 1;
        if parse_ts(&line[start..colon]).is_some() {
            let (comm, tid, tgid) = task_perf(line[..start].trim_end())?;
            if comm.is_empty() {
                return None;
            }
            return after_cpu(comm, tid, tgid, None, &line[start..]);
        }
        from = colon + 1;
    }
    None
}

/// The rest of a line after the CPU column: flags, timestamp, event, body.
fn after_cpu<'a>(
    comm: &'a str,
    tid: i32,
    tgid: Option<i32>,
    cpu: Option<u32>,
    rest: &'a str,
) -> Option<Prefix<'a>> {
    let mut rest = rest;
    // Optional irq-flags column (any width), then the timestamp with its colon.
    let (tok, tail) = split_token(rest);
    let ts_tok = match tok.strip_suffix(':') {
        Some(t) if parse_ts(t).is_some() => {
            rest = tail;
            t
        }
        _ => {
            if tok.contains(':') || tok.is_empty() {
                return None;
            }
            let (tok2, tail2) = split_token(tail.trim_start());
            rest = tail2;
            tok2.strip_suffix(':')?
        }
    };
    let ts = parse_ts(ts_tok)?;
    let (mut ev, mut tail) = split_token(rest.trim_start());
    // perf script's period column (`-F +period`, or its default when the
    // samples have a period): a bare number between the time and the event.
    if !ev.is_empty() && ev.bytes().all(|c| c.is_ascii_digit()) {
        (ev, tail) = split_token(tail.trim_start());
    }
    let event = ev.strip_suffix(':')?;
    if event.is_empty()
        || !event
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':' || c == b'-' || c == b'.')
    {
        return None;
    }
    Some(Prefix {
        comm,
        tid,
        tgid,
        cpu,
        ts,
        event,
        body: tail.trim(),
    })
}

/// Split at the first space: (token, rest starting at the space).
fn split_token(s: &str) -> (&str, &str) {
    match s.find(' ') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// `COMM-PID` with an optional `(TGID)` column after it.
fn task_dash(left: &str) -> Option<(&str, i32, Option<i32>)> {
    let mut left = left;
    let mut tgid = None;
    if let Some(inner) = left.strip_suffix(')') {
        let p = inner.rfind('(')?;
        let t = inner[p + 1..].trim();
        if !t.bytes().all(|c| c == b'-') {
            tgid = Some(t.parse::<i32>().ok()?);
        }
        left = inner[..p].trim_end();
    }
    let dash = left.rfind('-')?;
    let tid = left[dash + 1..].parse::<i32>().ok()?;
    let mut comm = &left[..dash];
    // trace-cmd report prefixes lines of an instance buffer with `NAME: `
    // at column 0; a comm is right-aligned in a 16-wide column, so a comm
    // line starts with a space unless the comm fills it (and then has no `: `).
    if let Some((inst, rest)) = comm.split_once(": ") {
        if !comm.starts_with(' ') && !inst.is_empty() && !inst.contains(' ') {
            comm = rest;
        }
    }
    Some((comm.trim_start(), tid, tgid))
}

/// `COMM TID` or `COMM PID/TID`.
fn task_perf(left: &str) -> Option<(&str, i32, Option<i32>)> {
    let left = left.trim_start();
    let sp = left.rfind(' ')?;
    let ids = &left[sp + 1..];
    let comm = left[..sp].trim();
    match ids.split_once('/') {
        Some((pid, tid)) => Some((comm, tid.parse().ok()?, Some(pid.parse().ok()?))),
        None => Some((comm, ids.parse().ok()?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_line_without_cpu_column() {
        let l = "swapper     0 194010.024867: sched:sched_switch: prev_comm=swapper/1 prev_pid=0";
        let p = parse(l, Style::Perf).unwrap();
        assert_eq!(
            (p.comm, p.tid, p.tgid, p.cpu, p.ts, p.event),
            (
                "swapper",
                0,
                None,
                None,
                194_010_024_867_000,
                "sched:sched_switch"
            )
        );
        assert_eq!(p.body, "prev_comm=swapper/1 prev_pid=0");
        let l = "kworker/u16:1 28039/28040 5.000001: sched:sched_wakeup: comm=a pid=1";
        let p = parse(l, Style::Perf).unwrap();
        assert_eq!(
            (p.comm, p.tid, p.tgid, p.cpu),
            ("kworker/u16:1", 28040, Some(28039), None)
        );
        assert_eq!(
            parse("# captured on: Mon Apr  6 14:14:28 2015", Style::Perf),
            None
        );
        assert_eq!(
            parse(
                "swapper 0 194010.024867: sched:sched_switch: x",
                Style::Dash
            ),
            None
        );
    }

    #[test]
    fn ftrace_line_with_flags() {
        let l = "            bash-8402    [001] d..2.   364.815366: sched_switch: prev_comm=bash prev_pid=8402";
        let p = parse(l, Style::Dash).unwrap();
        assert_eq!(
            (
                p.comm,
                p.tid,
                p.tgid,
                p.cpu.unwrap_or(u32::MAX),
                p.ts,
                p.event
            ),
            ("bash", 8402, None, 1, 364_815_366_000, "sched_switch")
        );
        assert_eq!(p.body, "prev_comm=bash prev_pid=8402");
    }

    #[test]
    fn ftrace_line_with_tgid_column() {
        let l = "            bash-8661    (   8661) [001] .....   369.256514: sched_process_fork: comm=bash pid=8661 child_comm=bash child_pid=8663";
        let p = parse(l, Style::Dash).unwrap();
        assert_eq!(
            (p.tid, p.tgid, p.cpu.unwrap_or(u32::MAX)),
            (8661, Some(8661), 1)
        );
        let l =
            "          <idle>-0       (-------) [000] d..1.   369.1: cpu_idle: state=1 cpu_id=0";
        let p = parse(l, Style::Dash).unwrap();
        assert_eq!((p.comm, p.tid, p.tgid), ("<idle>", 0, None));
    }

    #[test]
    fn comm_with_spaces_dashes_and_brackets() {
        let l =
            " CPU 0/KVM-4242  [003] d..2. 100.000001: kvm_entry: vcpu 0, rip 0xffffffff81000000";
        let p = parse(l, Style::Dash).unwrap();
        assert_eq!(
            (p.comm, p.tid, p.cpu.unwrap_or(u32::MAX)),
            ("CPU 0/KVM", 4242, 3)
        );
        let l = " qemu-system-x86-6660  [007]   398.691444: kvm_entry:            vcpu 3";
        let p = parse(l, Style::Dash).unwrap();
        assert_eq!((p.comm, p.tid, p.body), ("qemu-system-x86", 6660, "vcpu 3"));
        let l = "    kworker/u4:0-6     [001]  3343.176371: sched_wakeup:         sshd:1683 [120] success=1 CPU:001";
        let p = parse(l, Style::Dash).unwrap();
        assert_eq!(
            (p.comm, p.tid, p.ts),
            ("kworker/u4:0", 6, 3_343_176_371_000)
        );
    }

    #[test]
    fn trace_cmd_instance_prefix() {
        let l = "bpair:             bash-15950 [000]   602.097040: sched_wakeup_new:     bash:15954 [120] CPU:001";
        let p = parse(l, Style::Dash).unwrap();
        assert_eq!(
            (p.comm, p.tid, p.cpu.unwrap_or(u32::MAX)),
            ("bash", 15950, 0)
        );
        let l = "bpair:  sched-messaging-14775 [001]   582.473699: sched_waking: comm=a pid=1 prio=0 target_cpu=001";
        assert_eq!(parse(l, Style::Dash).unwrap().comm, "sched-messaging");
    }

    #[test]
    fn perf_script_lines() {
        let l = "     migration/0    18 [000]   369.561709738:    csd:csd_queue_cpu: cpu=1 callsite=x+0x11d";
        let p = parse(l, Style::Perf).unwrap();
        assert_eq!(
            (
                p.comm,
                p.tid,
                p.tgid,
                p.cpu.unwrap_or(u32::MAX),
                p.ts,
                p.event
            ),
            (
                "migration/0",
                18,
                None,
                0,
                369_561_709_738,
                "csd:csd_queue_cpu"
            )
        );
        let l = "            perf  8672/8673  [000]   369.561690:   sched:sched_waking: comm=migration/0 pid=18";
        let p = parse(l, Style::Perf).unwrap();
        assert_eq!((p.tid, p.tgid), (8673, Some(8672)));
        let l = "  CPU 0/KVM  4242 [001] 1.000000001: kvm:kvm_exit: reason pause rip 0x1 info 0 0";
        assert_eq!(parse(l, Style::Perf).unwrap().comm, "CPU 0/KVM");
    }

    #[test]
    fn perf_script_period_column() {
        let l = "  perf 8672 [000]   369.561690:          1 sched:sched_switch: prev_comm=perf prev_pid=8672";
        let p = parse(l, Style::Perf).unwrap();
        assert_eq!(
            (p.tid, p.cpu, p.ts, p.event, p.body),
            (
                8672,
                Some(0),
                369_561_690_000,
                "sched:sched_switch",
                "prev_comm=perf prev_pid=8672"
            )
        );
        let l = "  Timer 2301/2310 [003] 194010.024771:     250000 cpu-cycles:  ffffffff8104f1b6 x ([kernel.kallsyms])";
        let p = parse(l, Style::Perf).unwrap();
        assert_eq!((p.tid, p.tgid, p.event), (2310, Some(2301), "cpu-cycles"));
        let l = "swapper 0 194010.024867: 1 sched:sched_switch: prev_comm=swapper/1";
        assert_eq!(parse(l, Style::Perf).unwrap().event, "sched:sched_switch");
        // A number alone after the time is not an event.
        assert_eq!(parse("  perf 8672 [000] 369.561690: 1", Style::Perf), None);
    }

    #[test]
    fn rejects_non_event_lines() {
        for l in [
            "# tracer: nop",
            "cpus=2",
            "CPU:1 [LOST 12 EVENTS]",
            "        ffffffffb8985a24 __schedule+0x514 ([kernel.kallsyms])",
            "hello [1] world",
            "a-1 [0] 12.5x: e: b",
        ] {
            assert_eq!(parse(l, Style::Dash), None, "{l}");
            assert_eq!(parse(l, Style::Perf), None, "{l}");
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_ts("1.5"), Some(1_500_000_000));
        assert_eq!(parse_ts("12.000000001"), Some(12_000_000_001));
        assert_eq!(parse_ts("12.0000000001"), None);
        assert_eq!(parse_ts("99999999999999999999.1"), None);
        assert_eq!(parse_ts("123456"), Some(123_456));
    }
}
