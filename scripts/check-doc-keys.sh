#!/usr/bin/env bash
# Check that docs/report.md and docs/info.md name every JSON key that
# `schedscope report --all --format json` and `schedscope info --format json`
# print on the fixture traces (keys of maps keyed by data, such as
# `events_by_name`, are not keys). A key is named when it appears inside a
# `code span` of the page. Prints the undocumented keys and exits 1 when
# there are some: document a new key where its section is described.
# Usage: scripts/check-doc-keys.sh   (scripts/test.sh runs it after the build)
# SCHEDSCOPE selects the binary (default: a debug build of this tree).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/debug-bin.sh
n=0
for f in fixtures/sim/*.data fixtures/idle/*.data fixtures/perf/*.data fixtures/tlb/*.txt fixtures/ftrace/tracefs-*.txt; do
    n=$((n + 1))
    "$bin" report --all --format json "$f" >"$tmp/report-$n.json" 2>/dev/null
    "$bin" info --format json "$f" >"$tmp/info-$n.json" 2>/dev/null
done
python3 - "$tmp" <<'PY'
import glob, json, os, re, sys

# Objects whose keys are data (event names, reasons, counts), not fields.
MAPS = {"events_by_name", "targets_hist", "tlb_flush_by_reason", "irq_vectors", "pulls_by_path", "pages_hist"}


def keys_of(value, parent=None, out=None):
    out = set() if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            if parent not in MAPS:
                out.add(k)
            keys_of(v, None if parent in MAPS else k, out)
    elif isinstance(value, list):
        for v in value:
            keys_of(v, parent, out)
    return out


bad = 0
for kind, page in (("report", "docs/report.md"), ("info", "docs/info.md")):
    keys = set()
    for f in glob.glob(os.path.join(sys.argv[1], kind + "-*.json")):
        keys_of(json.load(open(f)), out=keys)
    spans = " ".join(re.findall(r"`([^`]*)`", open(page, encoding="utf-8").read()))
    missing = sorted(k for k in keys if not re.search(r"\b%s\b" % re.escape(k), spans))
    for k in missing:
        print(f"{page}: JSON key `{k}` of `schedscope {kind} --format json` is not documented")
    bad += len(missing)
    print(f"check-doc-keys: {page}: {len(keys) - len(missing)} of {len(keys)} keys documented", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
