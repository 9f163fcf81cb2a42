#!/usr/bin/env bash
# The export's schema as Markdown for docs/export.md: the
# `_schedscope/README.md` that `schedscope export` writes into every export
# root, generated from the table definitions in crates/export/src/schema.rs
# (the same definitions drive the writers and `_schedscope/schema.json`),
# with its title dropped and its headings one level down (the export
# escapes the `|` inside column docs; older builds did not, so any bare one
# is escaped here too).
#
# Usage: scripts/export-schema.sh            # print it (as docs/export.md shows it)
#        scripts/export-schema.sh --update   # rewrite the export-schema block of docs/export.md
#        scripts/export-schema.sh --check    # exit 1 when that block is out of date (scripts/test.sh)
# SCHEDSCOPE selects the binary (default: a debug build of this tree).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/debug-bin.sh
"$bin" export fixtures/ftrace/tracefs-sched.txt --tables trace --parquet "$tmp/root" >/dev/null 2>"$tmp/err" || {
    cat "$tmp/err" >&2
    exit 1
}
python3 - "$tmp/root/_schedscope/README.md" >"$tmp/schema.md" <<'PY'
import re
import sys

for line in open(sys.argv[1], encoding="utf-8").read().split("\n")[1:]:
    if line.startswith("#"):
        line = "#" + line
    elif line.startswith("| ") and line.count("|") > 5:
        cells = line[1:-1].split("|")
        doc = re.sub(r"(?<!\\)\|", r"\\|", "|".join(cells[3:]).strip())
        line = "|" + "|".join(cells[:3]) + "| " + doc + " |"
    print(line)
PY
python3 scripts/lib/md-block.py "${1:-}" export-schema docs/export.md <"$tmp/schema.md"
