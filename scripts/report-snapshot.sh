#!/usr/bin/env bash
# Write `schedscope report --all` (JSON and text) and `schedscope info` of
# every fixture trace, plus any extra files given, into DIR, so that a
# refactor can be checked byte for byte against the outputs before it:
#
#   scripts/report-snapshot.sh DIR [EXTRA_FILE...]
#   diff -r BEFORE_DIR AFTER_DIR
#
# SCHEDSCOPE selects the binary (default: a release build of this tree).
# The trace path in the output is the one given here, so run both snapshots
# from the same directory with the same arguments.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/report-snapshot.sh DIR [EXTRA_FILE...]}
shift
mkdir -p "$out"
bin=${SCHEDSCOPE:-}
if [ -z "$bin" ]; then
    (cd "$root" && cargo build --release -q -p schedscope) >&2
    bin=$root/target/release/schedscope
fi
files=()
while IFS= read -r f; do files+=("$f"); done < <(
    cd "$root" && find fixtures -type f \( -name '*.data' -o -name '*.txt' \) \
        ! -name '*.counts.txt' ! -name '*.script.txt' ! -name '*.tlb.txt' \
        ! -name 'kernel.txt' ! -name 'README*' | sort)
for f in "${files[@]}" "$@"; do
    case $f in /*) p=$f ;; *) p=$root/$f ;; esac
    name=$(echo "$f" | tr '/' '_')
    # Outputs name the file as given: use the repository-relative name for
    # fixtures so that snapshots of two checkouts compare equal.
    (cd "$root" && "$bin" report --all --format json "$f" >"$out/$name.json" 2>"$out/$name.json.err"; echo "exit $?" >>"$out/$name.json.err") || true
    (cd "$root" && "$bin" report --all "$f" >"$out/$name.txt" 2>"$out/$name.txt.err"; echo "exit $?" >>"$out/$name.txt.err") || true
    (cd "$root" && "$bin" info "$f" >"$out/$name.info" 2>&1; echo "exit $?" >>"$out/$name.info") || true
done
echo "snapshot of ${#files[@]} fixtures and $# extra files in $out" >&2
