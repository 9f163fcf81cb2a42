#!/usr/bin/env bash
# Compare `schedscope report --SECTION FILE` across builds, run by run: each
# repetition runs every binary once, back to back, in an order rotated each
# repetition, so that a noisy stretch of the host hits all of them alike.
# Prints per binary the best and median wall time and, against the first
# binary, the median of the per-repetition ratios and how many repetitions
# it was faster in. This is how "speed no worse" is checked
# against an earlier build (docs/performance.md has the figures).
#
#   scripts/bench-paired.sh REPS SECTION FILE NAME=BIN [NAME=BIN...]
#   scripts/bench-paired.sh 31 all big.data \
#       old=../old/target/release/schedscope new=target/release/schedscope
#
# SECTION is a report flag without its dashes (all, latency, idle, ...).
# The first NAME=BIN is the reference. The load average is printed at the
# end: measure on a quiet machine.
set -euo pipefail

if [ $# -lt 4 ]; then
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
reps=$1; sec=$2; file=$3; shift 3
[ -r "$file" ] || { echo "bench-paired: cannot read $file" >&2; exit 2; }
bins=("$@"); n=${#bins[@]}
for nb in "${bins[@]}"; do
    b=${nb#*=}
    [ -x "$b" ] || { echo "bench-paired: $b is not an executable (NAME=BIN expected)" >&2; exit 2; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cat "$file" >/dev/null # warm the page cache
for r in $(seq "$reps"); do
    line="$r"
    declare -A t=()
    for j in $(seq 0 $((n - 1))); do
        k=$(((j + r) % n)); nb=${bins[$k]}; b=${nb#*=}
        t0=$(date +%s%N)
        "$b" report "--$sec" "$file" >/dev/null 2>&1 || { echo "bench-paired: $b report --$sec $file failed" >&2; exit 1; }
        t1=$(date +%s%N)
        t[$k]=$(((t1 - t0) / 1000))
    done
    for k in $(seq 0 $((n - 1))); do line="$line ${t[$k]}"; done
    echo "$line" >>"$out"
done
python3 - "$out" "$@" <<'PY'
import sys, statistics as st
rows = [list(map(int, l.split()))[1:] for l in open(sys.argv[1])]
names = [a.split('=')[0] for a in sys.argv[2:]]
for k, nm in enumerate(names):
    v = sorted(r[k] for r in rows)
    ratios = sorted(r[k] / r[0] for r in rows)
    wins = sum(1 for r in rows if r[k] < r[0])
    print("%-8s best %.4f  median %.4f s | ratio to %s: median %.3f, faster in %d/%d reps"
          % (nm, v[0] / 1e6, st.median(v) / 1e6, names[0], st.median(ratios), wins, len(rows)))
PY
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
