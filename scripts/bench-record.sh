#!/usr/bin/env bash
# Recording overhead and loss: schedscope record vs perf record, side by side.
#
# While `perf bench sched messaging -g 20 -l 1500` runs (override with
# WORKLOAD=...) under a system-wide recorder started one second before and
# stopped with SIGINT after it, measure for each recorder the lost events and the
# workload's own "Total time":
#   baseline            no recording
#   schedscope default  schedscope record (default per-CPU buffer)
#   schedscope -m1024   schedscope record --buffer-size 1024 (pages, = perf -m 1024)
#   perf -m 1024        perf record -m 1024 -a -e <the same events and filters>
# With BEFORE=path/to/old/schedscope, "before default" (that binary, default
# buffer) runs too, so two builds are compared in the same alternation.
# CONFIGS="default m1024" picks the schedscope configurations; besides
# those two, "+system:event" is the default set plus that event (`-e
# +system:event`) and "-system:event" the default set without it (the other
# defaults this kernel has, named with -e), so that the cost of one event is
# measured in the same alternation: CONFIGS="-sched:sched_stat_runtime default".
# PERF=0 leaves out the perf record runs.
# REPEAT=N repeats the whole alternation N times (default 1), rotating its
# order by one step each time; a table of medians per recorder follows, and
# the median of the per-repetition ratios of each recorder's workload time
# to the first schedscope configuration's. Besides wall time, which a loaded machine
# makes noisy, it prints measures that load does not move much: bytes per
# sample of the data section, the recorder's CPU time (user+sys) and how often it
# was woken (voluntary context switches per second of recording), from
# /proc, and for schedscope the fullest a ring was when drained (its
# "fullest ring" figure: the buffer's headroom, near 100% means near loss).
# Rates are per second of recording (from the recorder's start to its
# SIGINT): events/s, data MB/s per CPU (the ring sizing assumes at most
# 8 MiB/s per CPU, see docs/record.md), and the events/s of COUNT (default
# sched:sched_stat_runtime), counted in the file.
# The load average is printed at the start, after each repetition and at the end.
# Needs root, perf and python3. Builds the release binary if missing.
set -euo pipefail

cd "$(dirname "$0")/.."
REPEAT=${REPEAT:-1}
PERF=${PERF:-1}
COUNT=${COUNT:-sched:sched_stat_runtime}
NCPU=$(nproc)
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
sched:sched_process_exec sched:sched_wake_idle_without_ipi sched:sched_stat_runtime
kvm:kvm_exit kvm:kvm_entry
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

# The default events this kernel has, without $1, as one -e list (the
# softirq filter follows the names: schedscope applies it by name).
defaults_without() {
    local e out=()
    for e in $DEFAULTS; do
        [ "$e" = "$1" ] && continue
        [ -e "$TRACEFS/events/${e%%:*}/${e#*:}/id" ] && out+=("$e")
    done
    (IFS=,; echo "${out[*]}")
}

workload_time() { sed -n 's/.*Total time: *\([0-9.]*\).*/\1/p' "$1" | tail -1; }

# Samples, lost samples and samples of tracepoint $2 in a perf.data file:
# lost = max(sum of PERF_RECORD_LOST, sum of PERF_RECORD_LOST_SAMPLES), the
# same rule for both tools. Samples are told apart by their first u64
# (PERF_SAMPLE_IDENTIFIER, which both tools record with several events).
file_stats() {
    python3 - "$1" "$TRACEFS/events/${2%%:*}/${2#*:}/id" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
try:
    tp = int(open(sys.argv[2]).read())
except OSError:
    tp = None
attr_size, aoff, asz, off, size = struct.unpack_from('<QQQQQ', b, 16)
ids = set()
for a in range(aoff, aoff + asz, attr_size):
    kind, = struct.unpack_from('<I', b, a)
    config, = struct.unpack_from('<Q', b, a + 8)
    ioff, isz = struct.unpack_from('<QQ', b, a + attr_size - 16)
    if kind == 2 and config == tp:
        ids.update(struct.unpack_from(f'<{isz // 8}Q', b, ioff))
p, end = off, off + size
samples = lost = lost_samples = counted = 0
while p + 8 <= end:
    ty, misc, sz = struct.unpack_from('<IHH', b, p)
    if sz < 8: break
    if ty == 9:
        samples += 1
        if struct.unpack_from('<Q', b, p + 8)[0] in ids: counted += 1
    elif ty == 2: lost += struct.unpack_from('<Q', b, p + 16)[0]
    elif ty == 13: lost_samples += struct.unpack_from('<Q', b, p + 8)[0]
    p += sz
print(samples, max(lost, lost_samples), counted)
PY
}

LOG=$TMP/runs.tsv
: > "$LOG"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
HDR='%-38s %4s %10s %8s %8s %10s %8s %8s %9s %8s %9s %8s %9s\n'
# shellcheck disable=SC2059
printf "$HDR" recorder run samples lost "lost %" "workload s" "B/sample" "rec CPU" "wakeup/s" "fullest" "events/s" "MB/s/CPU" "COUNT/s"

# One recording: NAME RUN KIND -- recorder command... The recorder runs
# system-wide in the background; one second later the workload runs; then
# the recorder's CPU time and voluntary context switches (its wake-ups) are
# read from /proc and it is stopped with SIGINT, as a user would.
run_recorder() {
    local name=$1 run=$2 kind=$3; shift 4
    local t0 pid
    t0=$(date +%s.%N)
    "$@" > /dev/null 2> "$TMP/r.err" &
    pid=$!
    sleep 1
    $WORKLOAD > "$TMP/w.out" 2>&1
    local usage
    usage=$(python3 - "$pid" "$t0" <<'PY'
import os, sys, time
pid, t0 = sys.argv[1], float(sys.argv[2])
st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
cpu = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
w = sum(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("voluntary_ctxt_switches"))
print(f"{cpu:.2f} {w / (time.time() - t0):.0f}")
PY
)
    local span
    span=$(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.3f}')" "$t0")
    kill -INT "$pid"
    wait "$pid" || true
    local n m file fullest=nan counted
    if [ "$kind" = perf ]; then
        file=$TMP/p.data
        read -r n m counted < <(file_stats "$file" "$COUNT")
    else
        file=$TMP/s.data
        local line
        line=$(grep ' events, ' "$TMP/r.err" | tail -1)
        n=$(echo "$line" | awk '{print $2}')
        m=$(echo "$line" | awk '{print $4}')
        fullest=$(sed -n 's/.*fullest ring \([0-9]*\)%.*/\1/p' "$TMP/r.err" | tail -1)
        fullest=${fullest:-nan}
        read -r _ _ counted < <(file_stats "$file" "$COUNT")
    fi
    local size cpu wake
    # Data section size (header bytes 48..56): the records, without the
    # feature sections (kallsyms is megabytes in both tools' files).
    size=$(python3 -c "import struct,sys; print(struct.unpack_from('<Q', open(sys.argv[1],'rb').read(56), 48)[0])" "$file" 2>/dev/null || echo 0)
    read -r cpu wake <<< "$usage"
    python3 - "$name" "$run" "$n" "$m" "$(workload_time "$TMP/w.out")" "$size" "$cpu" "$wake" "$fullest" "$span" "$counted" "$NCPU" >> "$LOG" <<'PY'
import sys
name, run, n, m, wl, size, cpu, wake, fullest, span, counted, ncpu = sys.argv[1:]
n, m, size, span, counted, ncpu = int(n or 0), int(m or 0), int(size), float(span), int(counted or 0), int(ncpu)
print("\t".join([name, run, str(n), str(m), f"{100*m/(n+m) if n+m else 0:.2f}", wl or "nan",
      f"{size/n if n else 0:.1f}", cpu, wake, fullest, f"{n/span:.0f}",
      f"{size/span/ncpu/1e6:.2f}", f"{counted/span:.0f}"]))
PY
    # shellcheck disable=SC2059
    tail -1 "$LOG" | awk -F'\t' -v fmt="$HDR" '{printf fmt, $1,$2,$3,$4,$5"%",$6,$7,$8,$9,$10,$11,$12,$13}'
}

# One step of a repetition: the baseline, a schedscope configuration or perf.
step() {
    local r=$1 cfg=$2 t
    case $cfg in
        baseline)
            $WORKLOAD > "$TMP/base.out" 2>&1
            t=$(workload_time "$TMP/base.out")
            printf 'baseline\t%s\t0\t0\t0\t%s\t0\t0\t0\tnan\t0\t0\t0\n' "$r" "$t" >> "$LOG"
            printf '%-38s %4s %10s %8s %8s %10s\n' baseline "$r" - - - "$t"
            return ;;
        before)
            run_recorder "before default" "$r" schedscope -- "$BEFORE" record -o "$TMP/s.data"
            return ;;
        perf)
            run_recorder "perf -m 1024" "$r" perf -- perf record -q -m 1024 -a "${PERF_EVENTS[@]}" -o "$TMP/p.data"
            return ;;
    esac
    local extra=()
    case $cfg in
        default) ;;
        m1024) extra=(--buffer-size 1024) ;;
        +*:*) extra=(-e "$cfg") ;;
        -*:*) extra=(-e "$(defaults_without "${cfg#-}")") ;;
        *) echo "bench-record.sh: unknown configuration '$cfg' in CONFIGS" >&2; exit 2 ;;
    esac
    run_recorder "schedscope $cfg" "$r" schedscope -- "$BIN" record -o "$TMP/s.data" "${extra[@]}"
}

STEPS=(baseline)
[ -n "${BEFORE:-}" ] && STEPS+=(before)
for cfg in ${CONFIGS:-default m1024}; do STEPS+=("$cfg"); done
[ "$PERF" != 0 ] && STEPS+=(perf)
# The order rotates by one step per repetition, so that no recorder always
# follows the same one (a run heats the caches and the page cache for the next).
for r in $(seq 1 "$REPEAT"); do
    n=${#STEPS[@]}
    for (( k=0; k<n; k++ )); do
        step "$r" "${STEPS[$(( (k + r - 1) % n ))]}"
    done
    echo "load average after run $r: $(cut -d' ' -f1-3 /proc/loadavg)"
done

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "medians over $REPEAT run(s); slowdown = median workload time / median baseline - 1; fullest = largest"
python3 - "$LOG" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r[0], []).append(r)
med = lambda rs, i: st.median(float(x[i]) for x in rs)
base = med(by["baseline"], 5)
print(f"{'recorder':38} {'workload s':>10} {'slowdown':>9} {'lost':>8} {'lost %':>7} {'B/sample':>9} {'rec CPU s':>9} {'wakeup/s':>9} {'fullest %':>9} {'events/s':>9} {'MB/s/CPU':>8} {'COUNT/s':>8}")
for name, rs in by.items():
    wl = med(rs, 5)
    if name == "baseline":
        print(f"{name:38} {wl:10.2f}")
        continue
    print(f"{name:38} {wl:10.2f} {100*(wl/base-1):+8.1f}% {med(rs,3):8.0f} {med(rs,4):6.2f}% {med(rs,6):9.1f} {med(rs,7):9.2f} {med(rs,8):9.0f} {max(float(x[9]) for x in rs):9.0f} {med(rs,10):9.0f} {med(rs,11):8.2f} {med(rs,12):8.0f}")
# Run by run (they alternate in the same repetitions): the median of the
# per-repetition ratios of workload times, against the baseline and
# against the first recorder.
def ratios(a, b):
    ref = {x[1]: float(x[5]) for x in by[b]}
    rs = [float(x[5]) / ref[x[1]] for x in by[a] if x[1] in ref]
    return f"median of {len(rs)} runs {st.median(rs):.3f} (min {min(rs):.3f}, max {max(rs):.3f})" if rs else "no runs"
names = [n for n in by if n != "baseline"]
for n in names:
    print(f"{n} / baseline: workload time ratio, {ratios(n, 'baseline')}")
for n in names[1:]:
    print(f"{n} / {names[0]}: workload time ratio, {ratios(n, names[0])}")
PY
