#!/usr/bin/env python3
"""Independent per-CPU idle time from `perf script` text (the oracle of the
idle analysis, issue 5).

usage: perf script -i FILE -F comm,tid,cpu,time,event,trace --ns | scripts/idle-oracle.py
       scripts/idle-oracle.py PERF_DATA      (runs perf script itself)

Rules (DESIGN.md "Thread states": idle = pid 0 current on a CPU):
  * the trace spans [first event, last event] over all CPUs;
  * a CPU's current task is learnt from its first event (the task printed in
    the line is the one current on that CPU), and it has been current since
    the trace start;
  * sched_switch makes next_pid current; any other event whose task is not
    the CPU's current one makes it current (a switch went unrecorded);
  * the last current task of each CPU runs until the trace end.
Prints JSON: {"start_ns", "end_ns", "idle_ns": {cpu: ns}, "busy_ns": {cpu: ns}}.
"""
import json
import re
import subprocess
import sys

LINE = re.compile(r"^\s*(.*?)\s+(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+?):\s(.*)$")
NEXT = re.compile(r"\bnext_pid=(-?\d+)")


def parse_ts(sec, frac):
    # --ns prints 9 digits; default perf script prints 6.
    return int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def oracle(lines):
    cur = {}     # cpu -> tid
    since = {}   # cpu -> ts
    idle = {}
    busy = {}
    start = end = None
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        _comm, tid, cpu, sec, frac, event, rest = m.groups()
        tid, cpu, ts = int(tid), int(cpu), parse_ts(sec, frac)
        if start is None:
            start = ts
        end = ts
        if cpu not in cur:
            cur[cpu] = tid
            since[cpu] = start
            idle.setdefault(cpu, 0)
            busy.setdefault(cpu, 0)
        if event == "sched:sched_switch":
            n = NEXT.search(rest)
            if not n:
                continue
            acc = idle if cur[cpu] == 0 else busy
            acc[cpu] += ts - since[cpu]
            cur[cpu] = int(n.group(1))
            since[cpu] = ts
        elif tid != cur[cpu]:
            # Any other event names the task current on its CPU: a switch
            # went unrecorded (perf can drop records without a LOST record).
            acc = idle if cur[cpu] == 0 else busy
            acc[cpu] += ts - since[cpu]
            cur[cpu] = tid
            since[cpu] = ts
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
