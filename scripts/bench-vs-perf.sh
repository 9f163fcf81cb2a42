#!/usr/bin/env bash
# Time `schedscope report --latency FILE` against `perf sched latency -i FILE`
# on the same recording, in the same run, and print wall times, the ratio and
# the peak RSS of both.
#
#   scripts/bench-vs-perf.sh [FILE]     # FILE: reuse an existing perf.data
#
# Without FILE it records ~1.4M events (needs root and perf):
#   perf record -a -m 1024 -e 'sched:*,ipi:*,tlb:tlb_flush' -o FILE \
#       -- perf bench sched messaging -g 20 -l 1500
# Environment: REPS (default 5) repetitions of each tool, the best wall time
# and the largest peak RSS are reported; SCHEDSCOPE (default: a release build
# of this workspace). Target: schedscope <= 1/3 of perf's wall time and no
# more peak RSS than perf.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-5}
file=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v perf >/dev/null || { echo "bench-vs-perf: perf is not installed" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-vs-perf: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

if [ -z "$file" ]; then
    file=$tmp/bench.data
    echo "recording into $file ..." >&2
    perf record -q -a -m 1024 -e 'sched:*,ipi:*,tlb:tlb_flush' -o "$file" \
        -- perf bench sched messaging -g 20 -l 1500 >/dev/null
fi
[ -r "$file" ] || { echo "bench-vs-perf: cannot read $file" >&2; exit 2; }

bin=${SCHEDSCOPE:-}
if [ -z "$bin" ]; then
    (cd "$root" && cargo build --release -q -p schedscope) >&2
    bin=$root/target/release/schedscope
fi

events=$(perf report -i "$file" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
size=$(stat -c %s "$file")

# measure NAME CMD...: runs CMD $reps times; sets best_wall (s) and peak_rss (KiB).
measure() {
    local name=$1; shift
    best_wall=""; peak_rss=0
    for _ in $(seq "$reps"); do
        /usr/bin/time -f '%e %M' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || {
            echo "bench-vs-perf: $name failed:" >&2; cat "$tmp/err" >&2; exit 1; }
        read -r wall rss < "$tmp/t"
        if [ -z "$best_wall" ] || awk "BEGIN{exit !($wall < $best_wall)}"; then best_wall=$wall; fi
        if [ "$rss" -gt "$peak_rss" ]; then peak_rss=$rss; fi
    done
}

# Warm the page cache for both.
cat "$file" >/dev/null

measure schedscope "$bin" report --latency "$file"
s_wall=$best_wall; s_rss=$peak_rss
measure perf perf sched latency -i "$file"
p_wall=$best_wall; p_rss=$peak_rss

printf 'file: %s (%.1f MB, %s samples)\n' "$file" "$(awk "BEGIN{print $size/1e6}")" "${events:-?}"
printf '%-32s %10s %14s\n' "command ($reps runs)" "best wall s" "peak RSS MiB"
printf '%-32s %10.3f %14.1f\n' "schedscope report --latency" "$s_wall" "$(awk "BEGIN{print $s_rss/1024}")"
printf '%-32s %10.3f %14.1f\n' "perf sched latency" "$p_wall" "$(awk "BEGIN{print $p_rss/1024}")"
awk -v s="$s_wall" -v p="$p_wall" -v sr="$s_rss" -v pr="$p_rss" 'BEGIN {
    printf "wall ratio schedscope/perf: %.3f (target <= 0.333)\n", (p > 0 ? s / p : 0)
    printf "RSS ratio  schedscope/perf: %.3f (target <= 1.0)\n", (pr > 0 ? sr / pr : 0)
}'
