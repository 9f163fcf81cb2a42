#!/usr/bin/env bash
# Time `schedscope export FILE --parquet DIR` (every table) against
# `perf script -i FILE` on the same recording, in the same run, and compare
# its peak RSS with `schedscope report --all FILE`'s. Prints wall times,
# ratios and peak RSS; exit status 1 when a target is missed.
#
#   scripts/bench-export.sh FILE        # e.g. /work/bench/big.data
#
# Targets (issue 11): export wall time <= 1/3 of perf script's, export peak
# RSS <= 1.5x report --all's. Environment: REPS (default 3) runs of each,
# alternated so that load changes hit all alike; best and median wall
# times, largest peak RSS (GNU time's maxrss); SCHEDSCOPE (default: a
# release build of this workspace). The load average is printed: measure
# on a quiet machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-3}
file=${1:?usage: scripts/bench-export.sh FILE}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v perf >/dev/null || { echo "bench-export: perf is not installed" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-export: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
[ -r "$file" ] || { echo "bench-export: cannot read $file" >&2; exit 2; }

bin=${SCHEDSCOPE:-}
if [ -z "$bin" ]; then
    (cd "$root" && cargo build --release -q -p schedscope) >&2
    bin=$root/target/release/schedscope
fi

# run1 NAME CMD...: one run; appends wall time (s) to $tmp/NAME.wall and
# peak RSS (KiB) to $tmp/NAME.rss.
run1() {
    local name=$1; shift
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || {
        echo "bench-export: $name failed:" >&2; cat "$tmp/err" >&2; exit 1; }
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f\n", (b - a) / 1e9}' >> "$tmp/$name.wall"
    cat "$tmp/t" >> "$tmp/$name.rss"
}
stats() {
    best=$(sort -n "$tmp/$1.wall" | head -1)
    med=$(sort -n "$tmp/$1.wall" | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    rss=$(sort -n "$tmp/$1.rss" | tail -1)
}

for _ in $(seq "$reps"); do
    run1 perf_script perf script -i "$file"
    rm -rf "$tmp/out"
    run1 export "$bin" export "$file" --parquet "$tmp/out"
    run1 report_all "$bin" report --all "$file"
done
rows=$(find "$tmp/out" -name '*.parquet' | wc -l)
size=$(du -sm "$tmp/out" | cut -f1)

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
echo "file: $file ($(stat -c %s "$file" | awk '{printf "%.1f MB", $1/1e6}'))"
echo "export: $rows Parquet files, $size MiB"
printf '%-32s %12s %12s %14s %12s %10s\n' "command ($reps runs)" "best wall s" "median s" "peak RSS MiB" "wall ratio" "RSS ratio"
stats perf_script; p_best=$best
printf '%-32s %12s %12s %14.1f\n' "perf script" "$best" "$med" "$(echo "$rss/1024" | bc -l)"
stats report_all; r_rss=$rss
printf '%-32s %12s %12s %14.1f\n' "schedscope report --all" "$best" "$med" "$(echo "$rss/1024" | bc -l)"
stats export
wall_ratio=$(awk -v a="$best" -v b="$p_best" 'BEGIN{printf "%.3f", a / b}')
rss_ratio=$(awk -v a="$rss" -v b="$r_rss" 'BEGIN{printf "%.3f", a / b}')
printf '%-32s %12s %12s %14.1f %12s %10s\n' "schedscope export (all tables)" "$best" "$med" "$(echo "$rss/1024" | bc -l)" "$wall_ratio" "$rss_ratio"
echo "targets: wall ratio <= 0.333 of perf script (best of $reps), RSS ratio <= 1.5 of report --all"
awk -v w="$wall_ratio" -v r="$rss_ratio" 'BEGIN{exit !(w <= 0.333 && r <= 1.5)}' || { echo "bench-export: target missed" >&2; exit 1; }
