#!/usr/bin/env bash
# Check the repository's Markdown: every relative link [text](path#anchor)
# must name a file or directory inside the repository, and an anchor must be
# a heading of the target page (GitHub's slugs); no Markdown or source file
# may point at design notes that live outside the repository. Prints each
# problem as FILE:LINE and exits 1 when there is one. Cheap: no build.
# Usage: scripts/check-doc-links.sh   (scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z --cached --others --exclude-standard | python3 -c '
import os, re, sys

root = os.path.realpath(".")
files = [f for f in sys.stdin.read().split("\0") if f and os.path.isfile(f)]
problems = []

def slug(heading):
    h = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")

anchors = {}
def anchors_of(path):
    if path not in anchors:
        seen, out, fence = {}, set(), False
        for line in open(path, encoding="utf-8", errors="replace"):
            if line.lstrip().startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
        anchors[path] = out
    return anchors[path]

link = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
for f in files:
    if not f.endswith(".md"):
        continue
    fence = False
    for no, line in enumerate(open(f, encoding="utf-8", errors="replace"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target in link.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            real = os.path.realpath(dest)
            if not (real == root or real.startswith(root + os.sep)):
                problems.append(f"{f}:{no}: link leaves the repository: {target}")
            elif not os.path.exists(dest):
                problems.append(f"{f}:{no}: no such file: {target}")
            elif anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
                problems.append(f"{f}:{no}: no heading #{anchor} in {dest}")

outside = re.compile(r"\b(DESIGN|STYLE)\.md\b")
for f in files:
    if f == "scripts/check-doc-links.sh":
        continue
    try:
        text = open(f, encoding="utf-8").read()
    except (UnicodeDecodeError, OSError):
        continue
    for no, line in enumerate(text.split("\n"), 1):
        if outside.search(line):
            problems.append(f"{f}:{no}: refers to a design note outside the repository")

for p in problems:
    print(p)
if problems:
    sys.exit(1)
md = sum(f.endswith(".md") for f in files)
print(f"check-doc-links: {md} Markdown files, every relative link and anchor resolves")
'
