#!/usr/bin/env bash
# Time `schedscope export FILE --parquet DIR` (every table) against
# `perf script -i FILE` on the same recording, in the same run, and compare
# its peak RSS with `schedscope report --all FILE`'s. Prints wall times,
# ratios and peak RSS; exit status 1 when a target is missed.
#
#   scripts/bench-export.sh FILE        # e.g. the file scripts/bench-vs-perf.sh records
#
# Targets (issue 11): export wall time <= 1/3 of perf script's, export peak
# RSS <= 1.5x report --all's. Environment: REPS (default 3) runs of each,
# alternated so that load changes hit all alike; best and median wall
# times, median user+sys CPU seconds, largest peak RSS (GNU time's maxrss);
# SCHEDSCOPE (default: a release build of this workspace); BEFORE (optional:
# another schedscope binary whose export is timed in the same runs, e.g. the
# previous main's, for before/after figures). The load average is printed:
# measure on a quiet machine, and compare CPU seconds when it is not.
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

bench_name=bench-export
# shellcheck source=lib/timing.sh
. "$root/scripts/lib/timing.sh"
before=${BEFORE:-}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for _ in $(seq "$reps"); do
    run1 perf_script perf script -i "$file"
    if [ -n "$before" ]; then
        rm -rf "$tmp/out"
        run1 export_before "$before" export "$file" --parquet "$tmp/out"
    fi
    rm -rf "$tmp/out"
    run1 export "$bin" export "$file" --parquet "$tmp/out"
    run1 report_all "$bin" report --all "$file"
done
rows=$(find "$tmp/out" -name '*.parquet' | wc -l)
size=$(du -sm "$tmp/out" | cut -f1)

echo "load: $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end ($(nproc) CPUs)"
echo "file: $file ($(stat -c %s "$file" | awk '{printf "%.1f MB", $1/1e6}'))"
echo "export: $rows Parquet files, $size MiB"
fmt='%-34s %11s %9s %8s %13s %11s %10s\n'
printf "$fmt" "command ($reps runs)" "best wall s" "median s" "CPU s" "peak RSS MiB" "wall ratio" "RSS ratio"
mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k / 1024}'; }
stats perf_script; p_best=$best_wall
printf "$fmt" "perf script" "$best_wall" "$med_wall" "$med_cpu" "$(mib "$peak_rss")" "" ""
stats report_all; r_rss=$peak_rss
printf "$fmt" "schedscope report --all" "$best_wall" "$med_wall" "$med_cpu" "$(mib "$peak_rss")" "" ""
# line NAME LABEL: a timed export, with its ratios to perf script (wall)
# and report --all (RSS); sets wall_ratio and rss_ratio.
line() {
    stats "$1"
    wall_ratio=$(awk -v a="$best_wall" -v b="$p_best" 'BEGIN{printf "%.3f", a / b}')
    rss_ratio=$(awk -v a="$peak_rss" -v b="$r_rss" 'BEGIN{printf "%.3f", a / b}')
    printf "$fmt" "$2" "$best_wall" "$med_wall" "$med_cpu" "$(mib "$peak_rss")" "$wall_ratio" "$rss_ratio"
}
[ -n "$before" ] && line export_before "export, BEFORE binary"
line export "schedscope export (all tables)"
echo "targets: wall ratio <= 0.333 of perf script (best of $reps), RSS ratio <= 1.5 of report --all"
awk -v w="$wall_ratio" -v r="$rss_ratio" 'BEGIN{exit !(w <= 0.333 && r <= 1.5)}' || { echo "bench-export: target missed" >&2; exit 1; }
