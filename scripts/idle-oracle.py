#!/usr/bin/env python3
"""Independent per-CPU idle time from `perf script` text (the oracle of the
idle analysis, issue 5).

usage: perf script -i FILE -F comm,tid,cpu,time,event,trace --ns | scripts/idle-oracle.py
       scripts/idle-oracle.py PERF_DATA      (runs perf script itself)

Rules (docs/design.md, "Thread states": idle = pid 0 current on a CPU), written
from the definitions, not from the Rust code:
  * the trace spans [first event, last event] over all CPUs;
  * a CPU's current task is learnt from its first event (the task printed in
    the line is the one current on that CPU), and it has been current since
    the trace start;
  * sched_switch makes next_pid current; the last current task of each CPU
    runs until the trace end;
  * lost events are repaired only on a CPU whose trace shows loss: a
    sched_switch there switches out a task that the previous sched_switch
    on that CPU did not switch in. On such a CPU, while idle:
      - a sched_switch of a task P that is runnable (woken by
        sched_waking/sched_wakeup/sched_wakeup_new, or switched out with
        prev_state R, R+; a sched_migrate_task restarts "runnable since")
        means P's switch-in was not recorded: P ran from the later of
        "idle since" and "P runnable since" (before the CPU's first switch,
        "idle since" is its first event);
      - a scheduler event (wakeup, migrate, fork, exit, exec) whose task P
        is not pid 0 proves P current: P ran from the later of "idle since"
        and "P runnable since" when P is runnable, else from that event on.
    Other events (softirqs, tlb flushes, ...) are not taken as evidence.
  * the CFS-bandwidth refill (only when some CPU shows loss): a task
    switched out runnable (R, R+) to pid 0 is held off; its next recorded
    switch-in while still runnable is a refill of its cgroup (a migration
    or an unrecorded switch-in ends the hold-off without one). From at
    least 3 refills of the task whose spacings are whole multiples of one
    period (shortest spacing >= 1 ms counts as one period; the period is
    the total spacing over the total periods; every spacing within 1/50 of
    a period of its multiple), a runnable held-off task's unrecorded
    switch-in is placed at the first point of that grid (anchored at its
    latest refill) at or after the hold-off, when that is no earlier than
    the rule's time and no later than the proving event.
Prints JSON: {"start_ns", "end_ns", "idle_ns": {cpu: ns}, "busy_ns": {cpu: ns}}.
"""
import json
import re
import subprocess
import sys

LINE = re.compile(r"^\s*(.*?)\s+(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+?):\s(.*)$")
NEXT = re.compile(r"\bnext_pid=(-?\d+)")
PREV = re.compile(r"\bprev_pid=(-?\d+)")
PREV_STATE = re.compile(r"\bprev_state=(\S+)")
PID = re.compile(r"\bpid=(-?\d+)")
WAKEUPS = ("sched:sched_waking", "sched:sched_wakeup", "sched:sched_wakeup_new")
NAMES_CURRENT = WAKEUPS + ("sched:sched_migrate_task", "sched:sched_process_fork",
                           "sched:sched_process_exit", "sched:sched_process_exec")


def parse_ts(sec, frac):
    # --ns prints 9 digits; default perf script prints 6.
    return int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def parse(lines):
    out = []
    for line in lines:
        m = LINE.match(line)
        if m:
            _comm, tid, cpu, sec, frac, event, rest = m.groups()
            out.append((int(tid), int(cpu), parse_ts(sec, frac), event, rest))
    return out


def lossy_cpus(events):
    """CPUs with a switch-out of a task the previous switch there did not switch in."""
    nxt, lossy = {}, set()
    for tid, cpu, ts, event, rest in events:
        if event != "sched:sched_switch":
            continue
        p, n = PREV.search(rest), NEXT.search(rest)
        if not (p and n):
            continue
        if cpu in nxt and nxt[cpu] != int(p.group(1)):
            lossy.add(cpu)
        nxt[cpu] = int(n.group(1))
    return lossy


def refill_after(instants, held):
    """The first refill at or after `held` on the grid `instants` show, or None."""
    if len(instants) < 3:
        return None
    gaps = [b - a for a, b in zip(instants, instants[1:])]
    shortest = min(gaps)
    if shortest < 1_000_000:
        return None
    def periods(d):
        return (d + shortest // 2) // shortest
    period = sum(gaps) // sum(periods(d) for d in gaps)
    for d in gaps:
        if periods(d) == 0 or abs(d - periods(d) * period) * 50 > period:
            return None
    anchor = instants[-1]
    if held < anchor:
        return None
    return anchor + -(-(held - anchor) // period) * period


def oracle(lines):
    events = parse(lines)
    lossy = lossy_cpus(events)
    cur = {}       # cpu -> tid
    since = {}     # cpu -> ts
    first = {}     # cpu -> ts of its first event
    switched = set()
    idle = {}
    busy = {}
    running = {}   # tid -> cpu
    runnable = {}  # tid -> runnable since
    held = {}      # tid -> held off (switched out runnable to idle) since
    refills = {}   # tid -> its recorded refill times
    track = bool(lossy)
    start = end = None

    def run(cpu, tid, ts):
        acc = idle if cur[cpu] == 0 else busy
        acc[cpu] += ts - since[cpu]
        cur[cpu] = tid
        since[cpu] = ts

    def switch_in_unrecorded(cpu, tid, ts):
        t_in = ts
        if tid in runnable:
            idle_since = since[cpu] if cpu in switched else first[cpu]
            t_in = max(idle_since, runnable[tid])
            if tid in held and t_in <= ts:
                r = refill_after(refills.get(tid, []), held[tid])
                if r is not None and max(r, t_in) <= ts:
                    t_in = max(r, t_in)
        held.pop(tid, None)
        if t_in <= ts:
            run(cpu, tid, max(t_in, since[cpu]))
            runnable.pop(tid, None)
            running[tid] = cpu

    for tid, cpu, ts, event, rest in events:
        if start is None:
            start = ts
        end = ts
        if cpu not in cur:
            cur[cpu] = tid
            since[cpu] = start
            first[cpu] = ts
            idle.setdefault(cpu, 0)
            busy.setdefault(cpu, 0)
        if event in NAMES_CURRENT and tid != 0 and cur[cpu] == 0 and cpu in lossy \
                and cpu in switched:
            switch_in_unrecorded(cpu, tid, ts)
        if event == "sched:sched_switch":
            p, n = PREV.search(rest), NEXT.search(rest)
            if not (p and n):
                continue
            prev, nxt = int(p.group(1)), int(n.group(1))
            if cur[cpu] == 0 and prev != 0 and cpu in lossy and prev in runnable:
                switch_in_unrecorded(cpu, prev, ts)
            switched.add(cpu)
            run(cpu, nxt, ts)
            if prev != 0:
                running.pop(prev, None)
                st = PREV_STATE.search(rest)
                if st and st.group(1).rstrip("+") == "R":
                    runnable[prev] = ts
                    if track and nxt == 0:
                        held[prev] = ts
                else:
                    runnable.pop(prev, None)
            if nxt != 0:
                if nxt in held:
                    if nxt in runnable:
                        refills.setdefault(nxt, []).append(ts)
                    del held[nxt]
                runnable.pop(nxt, None)
                running[nxt] = cpu
        elif event in WAKEUPS:
            w = PID.search(rest)
            if w:
                t = int(w.group(1))
                if t != 0 and t not in running and t not in runnable:
                    runnable[t] = ts
        elif event == "sched:sched_migrate_task":
            w = PID.search(rest)
            if w:
                held.pop(int(w.group(1)), None)
            if w and int(w.group(1)) in runnable:
                runnable[int(w.group(1))] = ts
    for cpu in cur:
        acc = idle if cur[cpu] == 0 else busy
        acc[cpu] += end - since[cpu]
    return {"start_ns": start, "end_ns": end,
            "idle_ns": {str(c): idle[c] for c in sorted(idle)},
            "busy_ns": {str(c): busy[c] for c in sorted(busy)}}


def main():
    if len(sys.argv) > 1:
        out = subprocess.run(
            ["perf", "script", "-i", sys.argv[1], "-F", "comm,tid,cpu,time,event,trace", "--ns"],
            check=True, capture_output=True, text=True)
        lines = out.stdout.splitlines()
    else:
        lines = sys.stdin
    json.dump(oracle(lines), sys.stdout)
    print()


if __name__ == "__main__":
    main()
