//! The scheduler's events: sched_switch (the kernel's print, trace-cmd's
//! raw print with a numeric prev_state, and its plugin's short form),
//! the wakeups, migrations, fork, exit and exec.

use super::fields::{cpu_num, fields, find_key, first, num};
use super::Payload;
use crate::ftrace_text::states::short_state;
use schedscope_trace::{PrevState, WakeKind};

/// `comm:pid [prio]` (trace-cmd short form): (comm, pid, prio, rest after `]`).
fn short_task(s: &str) -> Option<(&str, i32, i32, &str)> {
    let open = s.rfind(" [")?;
    let head = &s[..open];
    let close = s[open..].find(']')? + open;
    let prio = s[open + 2..close].trim().parse().ok()?;
    let colon = head.rfind(':')?;
    let pid = head[colon + 1..].parse().ok()?;
    Some((head[..colon].trim_start(), pid, prio, &s[close + 1..]))
}

pub(super) fn switch(body: &str) -> Option<Payload<'_>> {
    if body.starts_with("prev_comm=") {
        // The kernel's print fmt has ` ==> ` before next_comm; trace-cmd
        // without its sched_switch plugin prints the raw fields, with a
        // numeric prev_state and no arrow.
        let next = if find_key(body, "==> next_comm=").is_some() {
            "==> next_comm="
        } else {
            "next_comm="
        };
        let [pc, pp, ppr, ps, nc, np, npr] = fields(
            body,
            [
                "prev_comm=",
                "prev_pid=",
                "prev_prio=",
                "prev_state=",
                next,
                "next_pid=",
                "next_prio=",
            ],
        )?;
        let ps = first(ps);
        let (prev_state, raw_state) = if ps.bytes().all(|c| c.is_ascii_digit()) {
            (PrevState::default(), Some(ps.parse().ok()?))
        } else if let Some(h) = ps.strip_prefix("0x") {
            (PrevState::default(), Some(u64::from_str_radix(h, 16).ok()?))
        } else {
            (PrevState::parse_text(ps)?, None)
        };
        return Some(Payload::Switch {
            prev_comm: pc,
            prev_tid: num(pp)?,
            prev_prio: num(ppr)?,
            prev_state,
            raw_state,
            next_comm: nc,
            next_tid: num(np)?,
            next_prio: num(npr)?,
        });
    }
    // trace-cmd / perf plugin short form:
    // `prev_comm:prev_pid [prio] STATE ==> next_comm:next_pid [prio]`.
    let (left, right) = body.split_once(" ==> ")?;
    let open = left.rfind(" [")?;
    let close = left[open..].find(']')? + open;
    let state = left[close + 1..].trim();
    let (pc, pp, ppr, _) = short_task(&left[..close + 1])?;
    let (nc, np, npr, _) = short_task(right.trim())?;
    Some(Payload::Switch {
        prev_comm: pc,
        prev_tid: pp,
        prev_prio: ppr,
        prev_state: short_state(state)?,
        raw_state: None,
        next_comm: nc,
        next_tid: np,
        next_prio: npr,
    })
}

pub(super) fn wakeup(kind: WakeKind, body: &str) -> Option<Payload<'_>> {
    if body.starts_with("comm=") {
        let [c, p, pr, tc] = fields(body, ["comm=", "pid=", "prio=", "target_cpu="])?;
        return Some(Payload::Wakeup {
            kind,
            comm: c,
            tid: num(p)?,
            prio: num(pr)?,
            target_cpu: cpu_num(tc)?,
        });
    }
    // `comm:pid [prio] [success=1] CPU:001`.
    let (head, cpu) = body.rsplit_once(" CPU:")?;
    let (c, p, pr, _) =
        short_task(head.trim_end()).or_else(|| short_task(head.rsplit_once(" success=")?.0))?;
    Some(Payload::Wakeup {
        kind,
        comm: c,
        tid: p,
        prio: pr,
        target_cpu: cpu_num(cpu)?,
    })
}

pub(super) fn migrate(body: &str) -> Option<Payload<'_>> {
    let [c, p, _, o, d] = fields(body, ["comm=", "pid=", "prio=", "orig_cpu=", "dest_cpu="])?;
    Some(Payload::Migrate {
        comm: c,
        tid: num(p)?,
        orig_cpu: cpu_num(o)?,
        dest_cpu: cpu_num(d)?,
    })
}

pub(super) fn fork(body: &str) -> Option<Payload<'_>> {
    let [c, p, cc, cp] = fields(body, ["comm=", "pid=", "child_comm=", "child_pid="])?;
    Some(Payload::Fork {
        parent_comm: c,
        parent_tid: num(p)?,
        child_comm: cc,
        child_tid: num(cp)?,
    })
}

pub(super) fn exit(body: &str) -> Option<Payload<'_>> {
    let [c, p] = fields(body, ["comm=", "pid="])?;
    Some(Payload::Exit {
        comm: c,
        tid: num(p)?,
    })
}

pub(super) fn exec(body: &str) -> Option<Payload<'_>> {
    let [f, p] = fields(body, ["filename=", "pid="])?;
    Some(Payload::Exec {
        filename: f,
        tid: num(p)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::p;
    use super::super::{parse, BadBody, Kind};
    use super::*;

    #[test]
    fn switch_raw_numeric_form_of_trace_cmd() {
        match p(Kind::Switch, "prev_comm=kworker/u12:1 prev_pid=46 prev_prio=120 prev_state=4096 next_comm=sh next_pid=1642 next_prio=120") {
            Payload::Switch { prev_comm, prev_tid, raw_state, next_comm, next_tid, next_prio, .. } => {
                assert_eq!(
                    (prev_comm, prev_tid, raw_state, next_comm, next_tid, next_prio),
                    ("kworker/u12:1", 46, Some(4096), "sh", 1642, 120)
                );
            }
            other => panic!("{other:?}"),
        }
        // Lowercase x (TASK_DEAD, Android) is dead, not runnable.
        match p(Kind::Switch, "prev_comm=a prev_pid=5 prev_prio=120 prev_state=x ==> next_comm=b next_pid=6 next_prio=120") {
            Payload::Switch { prev_state, raw_state: None, .. } => assert!(prev_state.is_dead()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn switch_key_value_and_short_forms() {
        let want = Payload::Switch {
            prev_comm: "bash",
            prev_tid: 8402,
            prev_prio: 120,
            prev_state: PrevState::parse_text("S").unwrap(),
            raw_state: None,
            next_comm: "kworker/u4:0",
            next_tid: 6,
            next_prio: 120,
        };
        assert_eq!(
            p(Kind::Switch, "prev_comm=bash prev_pid=8402 prev_prio=120 prev_state=S ==> next_comm=kworker/u4:0 next_pid=6 next_prio=120"),
            want
        );
        assert_eq!(
            p(Kind::Switch, "bash:8402 [120] S ==> kworker/u4:0:6 [120]"),
            want
        );
        // Spaces in comms (qemu vCPU threads), preempted state.
        match p(Kind::Switch, "prev_comm=CPU 0/KVM prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=CPU 1/KVM next_pid=4243 next_prio=120") {
            Payload::Switch { prev_comm, prev_state, next_comm, next_tid, .. } => {
                assert_eq!((prev_comm, next_comm, next_tid), ("CPU 0/KVM", "CPU 1/KVM", 4243));
                assert!(prev_state.preempted && prev_state.is_runnable());
            }
            o => panic!("{o:?}"),
        }
        match p(
            Kind::Switch,
            "CPU 0/KVM:4242 [120] D|W ==> swapper/1:0 [120]",
        ) {
            Payload::Switch {
                prev_comm,
                prev_state,
                next_tid,
                ..
            } => {
                assert_eq!(
                    (prev_comm, prev_state.bits, next_tid),
                    ("CPU 0/KVM", PrevState::D | PrevState::I, 0)
                );
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(parse(Kind::Switch, "prev_comm=x prev_pid=zz"), Err(BadBody));
    }

    #[test]
    fn wakeup_forms() {
        let w = |b| match p(Kind::Wake(WakeKind::Wakeup), b) {
            Payload::Wakeup {
                comm,
                tid,
                prio,
                target_cpu,
                ..
            } => (comm, tid, prio, target_cpu),
            o => panic!("{o:?}"),
        };
        assert_eq!(
            w("comm=migration/1 pid=21 prio=0 target_cpu=001"),
            ("migration/1", 21, 0, 1)
        );
        assert_eq!(
            w("comm=foo pid=7 prio=120 success=1 target_cpu=003"),
            ("foo", 7, 120, 3)
        );
        assert_eq!(
            w("kworker/u4:0:6 [120] success=1 CPU:001"),
            ("kworker/u4:0", 6, 120, 1)
        );
        assert_eq!(w("sshd:1683 [120] CPU:000"), ("sshd", 1683, 120, 0));
    }
}
