#!/usr/bin/env bash
# Print the workspace's crate graph from `cargo metadata`, not by hand:
# one line per crate, in layers (a crate sits one layer above the highest
# crate it depends on), with its direct normal dependencies on other
# workspace crates, then the dev-only dependencies. Crates are named by
# their directory under crates/.
#
# Usage: scripts/crate-graph.sh            # print it (as the docs show it)
#        scripts/crate-graph.sh --update   # rewrite the crate-graph blocks of README.md and docs/design.md
#        scripts/crate-graph.sh --check    # exit 1 when those blocks are out of date (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
graph="$(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, os, sys

meta = json.load(sys.stdin)
members = set(meta["workspace_members"])
pkgs = [p for p in meta["packages"] if p["id"] in members]
short = {p["name"]: os.path.basename(os.path.dirname(p["manifest_path"])) for p in pkgs}
deps, dev = {}, {}
for p in pkgs:
    me = short[p["name"]]
    deps[me], dev[me] = set(), set()
    for d in p["dependencies"]:
        if d["name"] not in short or short[d["name"]] == me:
            continue
        (dev if d["kind"] == "dev" else deps)[me].add(short[d["name"]])
    dev[me] -= deps[me]

layer = {}
def depth(c, seen=()):
    if c in seen:
        sys.exit("crate-graph: dependency cycle through " + " -> ".join(seen + (c,)))
    if c not in layer:
        layer[c] = 1 + max((depth(d, seen + (c,)) for d in deps[c]), default=-1)
    return layer[c]
for c in deps:
    depth(c)

used = {d for c in deps for d in deps[c] | dev[c]}
width = max(len(c) for c in deps)
print("Workspace crates by layer (a crate depends only on crates in lower layers):")
print()
for lvl in range(max(layer.values()), -1, -1):
    for c in sorted(c for c in deps if layer[c] == lvl):
        arrow = "-> " + ", ".join(sorted(deps[c])) if deps[c] else "(no workspace dependencies)"
        print(f"  {lvl}  {c:<{width}}  {arrow}")
print()
print("Nothing in the workspace depends on: " + ", ".join(sorted(c for c in deps if c not in used)))
print("Dev-only dependencies (tests, benches):")
for c in sorted(c for c in dev if dev[c]):
    print(f"  {c:<{width}}  -> " + ", ".join(sorted(dev[c])))
')"
# In the docs the graph is an indented code block between blank lines.
{ echo; printf '%s\n' "$graph" | sed 's/^./    &/'; echo; } |
    python3 scripts/lib/md-block.py "${1:-}" crate-graph README.md docs/design.md
