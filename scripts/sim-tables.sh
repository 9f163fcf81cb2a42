#!/usr/bin/env bash
# Reproduce the example tables of docs/report.md, in the shape of the seeds' LKML posts:
#
#   1. "gang vs baseline" (ebizzy-in-VMs style): two CPU-bound 4-vCPU VMs on
#      4 CPUs, per-CPU fair scheduling vs co-scheduling, from the simulator.
#   2. "PLE 1x vs 2x overcommit": one 4-vCPU VM on 4 CPUs vs two, from the
#      simulator (this machine cannot record kvm_exit).
#   3. Real recordings on this machine (root + perf): schedscope-ebizzy with
#      threads = CPUs vs 4x CPUs under `perf record -a -e sched:...`.
#
# Every number comes from `schedscope report --gang --lhp --format json` on
# the generated / recorded perf.data, never from the simulator's own truth.
# Output: markdown on stdout.
#
#   scripts/sim-tables.sh              # SEEDS="1 2 3" TICKS=100000 (1 s simulated)
#   SEEDS="1" TICKS=20000 scripts/sim-tables.sh
#   REAL=0 scripts/sim-tables.sh       # skip the real recordings
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seeds=${SEEDS:-"1 2 3"}
ticks=${TICKS:-100000}
real=${REAL:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v python3 >/dev/null || { echo "sim-tables: python3 is required" >&2; exit 2; }
(cd "$root" && cargo build -q -p schedscope-sim -p schedscope -p schedscope-ebizzy) >&2
sim=$root/target/debug/schedscope-sim
ss=$root/target/debug/schedscope
ebizzy=$root/target/debug/schedscope-ebizzy

for sc in gang-baseline gang-cosched ple-1x ple-2x; do
    for seed in $seeds; do
        "$sim" --scenario "$sc" --seed "$seed" --ticks "$ticks" --out "$tmp" 2>/dev/null
        "$ss" report --gang --lhp --format json "$tmp/$sc-s$seed.data" >"$tmp/$sc-s$seed.json"
    done
done

if [ "$real" = 1 ] && [ "$(id -u)" = 0 ] && command -v perf >/dev/null; then
    ncpu=$(nproc)
    for t in "$ncpu" $((ncpu * 4)); do
        perf record -q -a -e 'sched:sched_switch,sched:sched_waking,sched:sched_wakeup,sched:sched_wakeup_new,sched:sched_migrate_task' \
            -o "$tmp/real-t$t.data" -- "$ebizzy" -t "$t" -S 3 >"$tmp/real-t$t.out" 2>/dev/null
        "$ss" report --gang --lhp --gang-of 'comm=^ebizzy-' --format json "$tmp/real-t$t.data" >"$tmp/real-t$t.json"
    done
    echo "$ncpu" >"$tmp/real-ncpu"
    cut -d' ' -f1-3 /proc/loadavg >"$tmp/real-load"
    uname -r >"$tmp/real-kernel"
fi

python3 - "$tmp" "$seeds" "$ticks" <<'EOF'
import json, os, statistics, sys

tmp, seeds, ticks = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])

def load(name):
    with open(os.path.join(tmp, name)) as f:
        return json.load(f)

def dur_s(rep):
    return (rep["trace"]["end_ns"] - rep["trace"]["start_ns"]) / 1e9

def mean(xs):
    return statistics.mean(xs) if xs else float("nan")

def sd(xs):
    return statistics.stdev(xs) if len(xs) > 1 else 0.0

def change(a, b):
    return (b - a) / a * 100 if a else float("nan")

# 1. gang vs baseline
rows = {}
for sc in ("gang-baseline", "gang-cosched"):
    corun, frag, cpu, ple, sp = [], [], [], [], []
    for s in seeds:
        r = load(f"{sc}-s{s}.json")
        d = dur_s(r)
        for g in r["gang"]["gangs"]:
            corun.append(g["corun_ratio"] * 100)
            frag.append(g["fragmented_ratio"] * 100)
            cpu.append(sum(g["member_running_ns"]) / 1e6 / d)
        p = r["lhp"]["ple"]
        ple += [vm["per_second"] for vm in p["per_vm"]]
        sp.append(p["sibling_preempted"] / max(p["total"], 1) * 100)
    rows[sc] = (corun, frag, ple, sp, cpu)
print(f"### Gang co-run: baseline vs co-scheduling (simulated, 2 CPU-bound VMs x 4 vCPUs on 4 CPUs, "
      f"{ticks * 10 / 1e6:.1f} s each, seeds {' '.join(seeds)}; mean ± sd over VMs and seeds)\n")
print("| metric | baseline | gang | % change |")
print("|---|---:|---:|---:|")
names = ["co-run ratio (%)", "fragmented (% of run time)", "PLE exits/s per VM",
         "PLE with a sibling preempted (%)", "CPU time delivered per VM (ms/s)"]
for i, n in enumerate(names):
    a, b = rows["gang-baseline"][i], rows["gang-cosched"][i]
    print(f"| {n} | {mean(a):.1f} ± {sd(a):.1f} | {mean(b):.1f} ± {sd(b):.1f} | {change(mean(a), mean(b)):+.1f}% |")

# 2. PLE 1x vs 2x
print(f"\n### Pause-loop exits: 1x vs 2x overcommit (simulated 4-vCPU VMs on 4 CPUs, seeds {' '.join(seeds)})\n")
print("| overcommit | PLE exits/s per VM | sibling preempted (%) | all running (%) | siblings idle (%) | directed yield to sibling (% of PLE) | VM co-run (%) |")
print("|---|---:|---:|---:|---:|---:|---:|")
for sc, label in (("ple-1x", "1x (1 VM)"), ("ple-2x", "2x (2 VMs)")):
    rate, sp, ar, si, y, co = [], [], [], [], [], []
    for s in seeds:
        r = load(f"{sc}-s{s}.json")
        p = r["lhp"]["ple"]
        t = max(p["total"], 1)
        for vm in p["per_vm"]:
            rate.append(vm["per_second"])
        sp.append(p["sibling_preempted"] / t * 100)
        ar.append(p["all_running"] / t * 100)
        si.append(p["siblings_idle"] / t * 100)
        y.append(p["directed_yield"]["to_sibling"] / t * 100)
        co += [g["corun_ratio"] * 100 for g in r["gang"]["gangs"]]
    print(f"| {label} | {mean(rate):.0f} | {mean(sp):.1f} | {mean(ar):.1f} | {mean(si):.1f} | {mean(y):.1f} | {mean(co):.1f} |")

# 3. real recordings
if os.path.exists(os.path.join(tmp, "real-ncpu")):
    ncpu = int(open(os.path.join(tmp, "real-ncpu")).read())
    kernel = open(os.path.join(tmp, "real-kernel")).read().strip()
    load_avg = open(os.path.join(tmp, "real-load")).read().strip()
    print(f"\n### Real recordings: schedscope-ebizzy on {ncpu} CPUs (kernel {kernel}, 3 s each, perf record -a -e sched:..., "
          f"gang = the ebizzy-N worker threads; load average {load_avg} when recorded)\n")
    print("| threads | records/s | co-run (%) | fragmented (% of run time) | waker-preempted (ms/s) |")
    print("|---:|---:|---:|---:|---:|")
    for t in (ncpu, ncpu * 4):
        r = load(f"real-t{t}.json")
        d = dur_s(r)
        recs = "?"
        for line in open(os.path.join(tmp, f"real-t{t}.out")):
            if line.strip().endswith("records/s"):
                recs = line.split()[0]
        g = r["gang"]["gangs"][0]
        w = r["lhp"]["waker_preempted"]
        wp = sum(p["waker_preempted_ns"] for p in w.get("pairs", []) if p["wakee_comm"].startswith("ebizzy-")) / 1e6 / d
        print(f"| {t} | {recs} | {g['corun_ratio'] * 100:.1f} | {g['fragmented_ratio'] * 100:.1f} | {wp:.2f} |")
EOF
