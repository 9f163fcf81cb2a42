#!/usr/bin/env bash
# A release binary for distribution with its debug info split off:
#
#   scripts/dist.sh [OUTDIR]      # default OUTDIR: dist/
#
# builds the `profiling` profile (release code with line tables and
# symbols), then writes
#   OUTDIR/schedscope        stripped, as `cargo build --release` gives
#                            it, plus a .gnu_debuglink to the file below
#   OUTDIR/schedscope.debug  the symbols and line tables, which perf, gdb
#                            and addr2line read when it sits beside the
#                            binary (or in /usr/lib/debug/.build-id/)
# and prints their sizes. Needs objcopy (binutils).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
command -v objcopy >/dev/null || { echo "dist: objcopy is missing (apt-get install binutils)" >&2; exit 2; }

(cd "$root" && cargo build --profile profiling -p schedscope) >&2
full=$root/target/profiling/schedscope
mkdir -p "$out"
rm -f "$out/schedscope" "$out/schedscope.debug"
objcopy --only-keep-debug "$full" "$out/schedscope.debug"
# (--add-gnu-debuglink runs in OUTDIR so that the link names the bare file name)
(cd "$out" && objcopy --strip-all --add-gnu-debuglink=schedscope.debug "$full" schedscope)
ls -l "$full" "$out/schedscope" "$out/schedscope.debug" |
    awk '{ printf "%-48s %6.1f MB\n", $NF, $5 / 1e6 }'
