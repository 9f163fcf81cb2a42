#!/usr/bin/env python3
"""Print, replace or check a generated block of Markdown (shared by the
scripts that generate parts of the docs: scripts/crate-graph.sh,
scripts/export-schema.sh, which pass their own command-line option as MODE).

    md-block.py [--update|--check] NAME FILE... < generated-text

A block is the lines between `<!-- BEGIN NAME ... -->` and `<!-- END NAME -->`
(both kept). Without a mode the text read from stdin is printed; `--update`
rewrites each FILE's block with it; `--check` exits 1, naming the file, when
a block differs from it. A FILE without the block is an error.
"""
import re
import sys


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("", "--update", "--check"):
        sys.exit("usage: %s [--update|--check]" % (sys.argv[2] if len(sys.argv) > 2 else "md-block.py"))
    mode, name, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    body = sys.stdin.read()
    if not mode:
        sys.stdout.write(body)
        return
    if not body.endswith("\n"):
        body += "\n"
    pattern = re.compile(
        r"(<!-- BEGIN %s\b[^\n]*-->\n)(.*?)(<!-- END %s -->)" % (re.escape(name), re.escape(name)),
        re.S,
    )
    stale = []
    for path in files:
        text = open(path, encoding="utf-8").read()
        m = pattern.search(text)
        if not m:
            sys.exit(f"{path}: no <!-- BEGIN {name} --> ... <!-- END {name} --> block")
        if m.group(2) == body:
            continue
        if mode == "--check":
            stale.append(path)
        else:
            new = text[: m.start(2)] + body + text[m.end(2):]
            open(path, "w", encoding="utf-8").write(new)
            print(f"{path}: {name} block updated", file=sys.stderr)
    if stale:
        for path in stale:
            print(f"{path}: the {name} block is out of date", file=sys.stderr)
        sys.exit(1)


main()
