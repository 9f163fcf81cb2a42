#!/usr/bin/env bash
# Reproducer of the seed's nested-cgroup CFS-bandwidth setup, scaled to this
# machine (issue 5):
#
#   /ROOT/L2/C1 .. /ROOT/L2/Cg     cpu.shares proportional to their task count
#   /ROOT/L2/Ci/<task>             one sub-cgroup per task, capped at 50% of a
#                                  CPU (cfs_quota_us=50000, cfs_period_us=100000,
#                                  or cpu.max "50000 100000" on cgroup v2)
#
# with 2x more capped tasks than CPUs by default. Each task is a CPU burner
# that touches an array with a cache footprint (a cache line per write) and
# names itself (comm) after its leaf cgroup, so that a trace maps tasks to
# cgroups by comm. The script creates the cgroups, starts the burners, runs
# COMMAND (default: sleep SECONDS) while they burn, then kills the burners it
# started and removes the cgroups it created (also on error or Ctrl-C).
#
# usage: scripts/cgroup-scenario.sh [--no-caps] [--tasks N] [--groups G]
#            [--root NAME] [--l1-shares N] [--mb MB] [--seconds S]
#            [--stat-out FILE] [-- COMMAND...]
#
#   --no-caps        same tree and burners, no quota (throttled idle must vanish)
#   --tasks N        burners (default 2 x online CPUs)
#   --groups G       C1..CG groups, tasks dealt round-robin (default 3)
#   --root NAME      top cgroup name (default L1)
#   --l1-shares N    cpu.shares of the top cgroup (default 1024, the kernel's);
#                    a large value (262144) lets the burners reach their quota,
#                    and so be throttled, on a machine busy with other work
#   --mb MB          array size per burner in MiB (default 4)
#   --seconds S      how long to burn when no COMMAND is given (default 5)
#   --stat-out FILE  write "path nr_periods nr_throttled throttled_ns" per task
#                    cgroup, cpu.stat deltas over COMMAND
#
# Exit status: COMMAND's status; 77 when no cgroup cpu controller is available
# (v1 cpu.cfs_quota_us or v2 cpu.max), 2 on bad usage.
set -euo pipefail

caps=1
tasks=$(( 2 * $(nproc) ))
groups=3
root=L1
l1_shares=1024
mb=4
seconds=5
stat_out=
while [ $# -gt 0 ]; do
    case "$1" in
        --no-caps) caps=0 ;;
        --tasks) tasks=$2; shift ;;
        --groups) groups=$2; shift ;;
        --root) root=$2; shift ;;
        --l1-shares) l1_shares=$2; shift ;;
        --mb) mb=$2; shift ;;
        --seconds) seconds=$2; shift ;;
        --stat-out) stat_out=$2; shift ;;
        --) shift; break ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "cgroup-scenario.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$tasks$groups$mb$l1_shares" in *[!0-9]*) echo "cgroup-scenario.sh: --tasks, --groups, --mb and --l1-shares take positive integers" >&2; exit 2 ;; esac
[ "$tasks" -ge 1 ] && [ "$groups" -ge 1 ] || { echo "cgroup-scenario.sh: --tasks and --groups must be >= 1" >&2; exit 2; }
case "$root" in ''|*/*|.|..) echo "cgroup-scenario.sh: --root must be a plain name, got '$root'" >&2; exit 2 ;; esac

# --- find the cpu controller -------------------------------------------------
version=
base=
if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    version=1; base=/sys/fs/cgroup/cpu
else
    while read -r _ mnt fstype _; do
        if [ "$fstype" = cgroup2 ] && grep -qw cpu "$mnt/cgroup.controllers" 2>/dev/null; then
            version=2; base=$mnt; break
        fi
    done < /proc/mounts
fi
if [ -z "$version" ]; then
    echo "cgroup-scenario.sh: no cgroup cpu controller (neither v1 cpu.cfs_quota_us nor v2 cpu.max); skipping" >&2
    exit 77
fi

top="$base/$root"
if [ -e "$top" ]; then
    echo "cgroup-scenario.sh: $top already exists; choose another --root or remove it" >&2
    exit 2
fi

pids=()
dirs=()
cleanup() {
    local p d i
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    # Remove the cgroups we created, deepest first.
    for (( i=${#dirs[@]}-1; i>=0; i-- )); do
        d=${dirs[$i]}
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            rmdir "$d" 2>/dev/null && break
            sleep 0.1
        done
        [ -e "$d" ] && echo "cgroup-scenario.sh: could not remove $d" >&2
    done
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkcg() {
    mkdir "$1"
    dirs+=("$1")
    if [ "$version" = 2 ]; then
        # Children of this group need the cpu controller.
        echo +cpu > "$1/cgroup.subtree_control" 2>/dev/null || true
    fi
}

if [ "$version" = 2 ]; then
    echo +cpu > "$base/cgroup.subtree_control" 2>/dev/null || true
fi

set_shares() { # dir, shares
    if [ "$version" = 1 ]; then
        echo "$2" > "$1/cpu.shares"
    else
        local w=$(( $2 * 100 / 1024 ))
        [ "$w" -lt 1 ] && w=1
        [ "$w" -gt 10000 ] && w=10000
        echo "$w" > "$1/cpu.weight"
    fi
}

set_cap() { # dir
    if [ "$version" = 1 ]; then
        echo 100000 > "$1/cpu.cfs_period_us"
        echo 50000 > "$1/cpu.cfs_quota_us"
    else
        echo "50000 100000" > "$1/cpu.max"
    fi
}

read_stat() { # dir -> "nr_periods nr_throttled throttled_ns"
    awk '$1=="nr_periods"{p=$2} $1=="nr_throttled"{t=$2}
         $1=="throttled_time"{ns=$2} $1=="throttled_usec"{ns=$2*1000}
         END{printf "%d %d %d\n", p, t, ns}' "$1/cpu.stat"
}

mkcg "$top"
mkcg "$top/L2"
set_shares "$top" "$l1_shares"

# Deal tasks round-robin into groups; shares proportional to task count.
declare -a count
for (( g=1; g<=groups; g++ )); do count[$g]=0; done
for (( k=0; k<tasks; k++ )); do g=$(( k % groups + 1 )); count[$g]=$(( count[$g] + 1 )); done

burner='
import ctypes, sys
name, mb = sys.argv[1], int(sys.argv[2])
ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
n = mb << 20
buf = bytearray(n)
i = 0
while True:
    buf[i] = (buf[i] + 1) & 255
    i = (i + 4160) % n   # a new cache line (and page) on every write
'

leaves=()
for (( g=1; g<=groups; g++ )); do
    [ "${count[$g]}" -gt 0 ] || continue
    grp="$top/L2/C$g"
    mkcg "$grp"
    set_shares "$grp" $(( 1024 * count[$g] ))
    for (( k=1; k<=count[$g]; k++ )); do
        leaf="burnC${g}t${k}"
        dir="$grp/$leaf"
        mkcg "$dir"
        [ "$caps" = 1 ] && set_cap "$dir"
        leaves+=("$dir")
        # Join the cgroup before exec so that no burner cycle runs outside it.
        sh -c 'echo $$ > "$1/cgroup.procs" && exec python3 -c "$2" "$3" "$4"' \
            sh "$dir" "$burner" "$leaf" "$mb" &
        pids+=($!)
    done
done

mode=$([ "$caps" = 1 ] && echo "capped at 50% each" || echo "uncapped")
echo "cgroup-scenario.sh: cgroup v$version at $top: $tasks burners ($mode, ${mb} MiB arrays) in $groups groups on $(nproc) CPUs; pids ${pids[*]}" >&2
sleep 0.5  # let the burners start

declare -A before
for d in "${leaves[@]}"; do before[$d]=$(read_stat "$d"); done

rc=0
if [ $# -gt 0 ]; then
    "$@" || rc=$?
else
    sleep "$seconds"
fi

if [ -n "$stat_out" ]; then
    : > "$stat_out"
    for d in "${leaves[@]}"; do
        read -r p0 t0 n0 <<< "${before[$d]}"
        read -r p1 t1 n1 <<< "$(read_stat "$d")"
        echo "${d#"$base"} $(( p1 - p0 )) $(( t1 - t0 )) $(( n1 - n0 ))" >> "$stat_out"
    done
fi
exit "$rc"
