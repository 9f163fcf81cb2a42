#!/usr/bin/env bash
# The scale benchmark: `schedscope report --all` against `perf sched latency`
# on recordings of 1x, 10x (and optionally 100x) the standard workload, in one
# table, with the targets of the scale work (see docs/performance.md):
#
#   1x files:  wall ratio <= 1/5 (stretch 1/8), peak RSS <= 1/2 of perf's
#   10x file:  wall ratio <= 1/5, peak RSS <= 1/4 of perf's, and at most
#              2x schedscope's own peak RSS on the 1x file (memory that does
#              not grow with the trace)
#   100x file: wall ratio <= 1/5, peak RSS under 2 GiB
#
#   scripts/bench-vs-perf.sh --scale   # make the files once (root, perf), then time
#
# The recordings are made once and kept in $SCALE_DIR (default
# ~/.cache/schedscope-bench; several GB: never inside the repository):
#   perf-1x.data         perf record -a -m 4096 -e 'sched:*,ipi:*,tlb:tlb_flush'
#                        -- perf bench sched messaging -g 20 -l 1500
#   ss-1x.data           schedscope record -e +sched:sched_stat_runtime -- (same workload)
#   ss-10x.data          the same with -l 15000
#   ss-100x.data         the same with -l 170000 (only with SCALE_100=1: about
#                        9 GB and half an hour to record on a 2-CPU VM)
# Environment: REPS (default 5) alternated runs of each tool per file;
# SCHEDSCOPE (default: a release build of this workspace). Ratios are of
# best wall times measured in the same run. Exit status 1 when a target is
# missed.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
reps=${REPS:-5}
dir=${SCALE_DIR:-$HOME/.cache/schedscope-bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dir"

command -v perf >/dev/null || { echo "bench-vs-perf --scale: perf is not installed" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-vs-perf --scale: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

bin=${SCHEDSCOPE:-}
if [ -z "$bin" ]; then
    (cd "$root" && cargo build --release -q -p schedscope) >&2
    bin=$root/target/release/schedscope
fi

workload() { echo "perf bench sched messaging -g 20 -l $1"; }
make_file() { # NAME LOOPS KIND
    local f=$dir/$1
    [ -s "$f" ] && return 0
    echo "bench-vs-perf --scale: recording $f ($(workload "$2")) ..." >&2
    if [ "$3" = perf ]; then
        perf record -q -a -m 4096 -e 'sched:*,ipi:*,tlb:tlb_flush' -o "$f.tmp" -- $(workload "$2") >/dev/null
    else
        "$bin" record -e +sched:sched_stat_runtime -o "$f.tmp" -- $(workload "$2") >/dev/null
    fi
    mv "$f.tmp" "$f"
}
make_file perf-1x.data 1500 perf
make_file ss-1x.data 1500 ss
make_file ss-10x.data 15000 ss
files="perf-1x.data ss-1x.data ss-10x.data"
if [ "${SCALE_100:-0}" = 1 ]; then
    make_file ss-100x.data 170000 ss
    files="$files ss-100x.data"
fi

bench_name="bench-vs-perf --scale"
# shellcheck source=lib/timing.sh
. "$root/scripts/lib/timing.sh"

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs); $reps alternated runs per tool and file"
printf '%-14s %8s %12s %12s %8s %12s %12s %9s  %s\n' file events "report s" "perf s" ratio "RSS MiB" "perf MiB" "RSS ratio" verdict
fail=0
rss_1x=
for f in $files; do
    path=$dir/$f
    cat "$path" >/dev/null 2>&1 || true
    for _ in $(seq "$reps"); do
        run1 "ss-$f" "$bin" report --all "$path"
        run1 "perf-$f" perf sched latency -i "$path"
    done
    stats "perf-$f"; p_wall=$best_wall; p_rss=$peak_rss
    stats "ss-$f"
    events=$("$bin" info --format json "$path" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])' 2>/dev/null || echo "?")
    case $f in
        *-1x.data) wall_t=0.2; rss_t=0.5 ;;
        *-10x.data) wall_t=0.2; rss_t=0.25 ;;
        *) wall_t=0.2; rss_t=0 ;;
    esac
    [ "$f" = ss-1x.data ] && rss_1x=$peak_rss
    verdict=$(awk -v s="$best_wall" -v p="$p_wall" -v r="$peak_rss" -v pr="$p_rss" -v wt="$wall_t" -v rt="$rss_t" \
        -v r1="${rss_1x:-0}" -v f="$f" 'BEGIN {
        v = ""
        if (p > 0 && s / p > wt) v = v " wall>" wt
        if (rt > 0 && pr > 0 && r / pr > rt) v = v " RSS>" rt
        if (f ~ /10x/ && r1 > 0 && r > 2 * r1) v = v " RSS>2x(1x)"
        if (f ~ /100x/ && r > 2 * 1024 * 1024) v = v " RSS>2GiB"
        print (v == "" ? "ok" : "MISS" v)
    }')
    printf '%-14s %8s %12.3f %12.3f %8.3f %12.1f %12.1f %9.3f  %s\n' "$f" "$events" "$best_wall" "$p_wall" \
        "$(awk "BEGIN{print $best_wall/$p_wall}")" "$(awk "BEGIN{print $peak_rss/1024}")" \
        "$(awk "BEGIN{print $p_rss/1024}")" "$(awk "BEGIN{print $peak_rss/$p_rss}")" "$verdict"
    case $verdict in MISS*) fail=1 ;; esac
done
exit $fail
