#!/usr/bin/env bash
# Recording overhead and loss: schedscope record vs perf record, side by side.
#
# While `perf bench sched messaging -g 20 -l 1500` runs (override with
# WORKLOAD=...), measure for each recorder the lost events and the
# workload's own "Total time":
#   baseline            no recording
#   schedscope default  schedscope record (default per-CPU buffer)
#   schedscope -m1024   schedscope record --buffer-size 1024 (pages, = perf -m 1024)
#   perf -m 1024        perf record -m 1024 -a -e <the same events and filters>
# REPEAT=N repeats every configuration N times (default 1).
# Needs root, perf and python3. Builds the release binary if missing.
set -euo pipefail

cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-1}
WORKLOAD=${WORKLOAD:-"perf bench sched messaging -g 20 -l 1500"}
BIN=${SCHEDSCOPE:-target/release/schedscope}
TMP=$(mktemp -d /tmp/bench-record.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

if [ "$(id -u)" != 0 ]; then echo "bench-record.sh: needs root" >&2; exit 2; fi
[ -x "$BIN" ] || cargo build --release -p schedscope >&2

TRACEFS=/sys/kernel/tracing
[ -d $TRACEFS/events ] || TRACEFS=/sys/kernel/debug/tracing

# The default event set of schedscope record that this kernel has.
DEFAULTS="sched:sched_switch sched:sched_waking sched:sched_wakeup sched:sched_wakeup_new
sched:sched_migrate_task sched:sched_process_fork sched:sched_process_exit
sched:sched_process_exec sched:sched_wake_idle_without_ipi kvm:kvm_exit kvm:kvm_entry
ipi:ipi_send_cpu ipi:ipi_send_cpumask tlb:tlb_flush csd:csd_queue_cpu
csd:csd_function_entry csd:csd_function_exit power:cpu_idle irq:softirq_entry
irq:softirq_exit irq_vectors:call_function_entry irq_vectors:call_function_single_entry
irq_vectors:reschedule_entry"
PERF_EVENTS=()
for e in $DEFAULTS; do
    [ -e "$TRACEFS/events/${e%%:*}/${e#*:}/id" ] || continue
    PERF_EVENTS+=(-e "$e")
    case $e in irq:softirq_*) PERF_EVENTS+=(--filter 'vec == 7') ;; esac
done

workload_time() { sed -n 's/.*Total time: *\([0-9.]*\).*/\1/p' "$1" | tail -1; }

# Samples and lost samples in a perf.data file: lost = max(sum of
# PERF_RECORD_LOST, sum of PERF_RECORD_LOST_SAMPLES), the same rule for both tools.
file_stats() {
    python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
off, size = struct.unpack_from('<QQ', b, 40)
p, end = off, off + size
samples = lost = lost_samples = 0
while p + 8 <= end:
    ty, misc, sz = struct.unpack_from('<IHH', b, p)
    if sz < 8: break
    if ty == 9: samples += 1
    elif ty == 2: lost += struct.unpack_from('<Q', b, p + 16)[0]
    elif ty == 13: lost_samples += struct.unpack_from('<Q', b, p + 8)[0]
    p += sz
print(samples, max(lost, lost_samples))
PY
}

printf '%-20s %4s %12s %10s %9s %12s\n' recorder run "samples" "lost" "lost %" "workload s"
for r in $(seq 1 "$REPEAT"); do
    $WORKLOAD > "$TMP/base.out" 2>&1
    printf '%-20s %4s %12s %10s %9s %12s\n' baseline "$r" - - - "$(workload_time "$TMP/base.out")"

    for cfg in default m1024; do
        extra=()
        [ $cfg = m1024 ] && extra=(--buffer-size 1024)
        "$BIN" record -o "$TMP/s.data" "${extra[@]}" -- $WORKLOAD > "$TMP/s.out" 2> "$TMP/s.err"
        line=$(grep ' events, ' "$TMP/s.err" | tail -1)
        n=$(echo "$line" | awk '{print $2}')
        m=$(echo "$line" | awk '{print $4}')
        pct=$(echo "$line" | sed -n 's/.*(\([0-9.]*%\)).*/\1/p')
        printf '%-20s %4s %12s %10s %9s %12s\n' "schedscope $cfg" "$r" "$n" "$m" "$pct" "$(workload_time "$TMP/s.out")"
    done

    perf record -q -m 1024 -a "${PERF_EVENTS[@]}" -o "$TMP/p.data" -- $WORKLOAD > "$TMP/p.out" 2> "$TMP/p.err" || true
    read -r n m < <(file_stats "$TMP/p.data")
    pct=$(python3 -c "n,m=$n,$m; print(f'{100*m/(n+m) if n+m else 0:.2f}%')")
    printf '%-20s %4s %12s %10s %9s %12s\n' "perf -m 1024" "$r" "$n" "$m" "$pct" "$(workload_time "$TMP/p.out")"
done
