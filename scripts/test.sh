#!/usr/bin/env bash
# Run the whole schedscope test suite (the command README.md and CI use).
# First the habits every commit keeps: formatting, clippy with warnings as
# errors, the API docs with warnings as errors, and the Markdown docs (links
# resolve; the generated crate graph and export schema are current; every
# JSON key of report and info is documented). Then the tests. As root with
# perf installed, the tests record real traces and compare with perf script
# / perf sched; otherwise those tests print why they skip.
# Tests run one at a time: several record system-wide, and a concurrent
# test would become part of what they measure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# One clean build, not a development loop: incremental data would add
# ~1.7 GB to the target directory for nothing. Clippy, docs and the test
# build take about 2.6 GB of disk (Cargo.toml, [profile.dev]); say so
# before they fill a disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
free_mb=$(df -Pm "$target" | awk 'NR == 2 { print $4 }')
echo "test.sh: ${free_mb} MB free for $target" >&2
if [ "${free_mb:-0}" -lt 4000 ]; then
    echo "test.sh: warning: the build and tests need about 4 GB of disk; only ${free_mb} MB free" >&2
fi
echo "test.sh: cargo fmt --check" >&2
cargo fmt --all --check
echo "test.sh: cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets -- -D warnings
echo "test.sh: cargo doc -D warnings" >&2
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
echo "test.sh: docs (links, crate graph, export schema)" >&2
bash scripts/check-doc-links.sh
bash scripts/crate-graph.sh --check
cargo build --workspace --all-targets
SCHEDSCOPE="$target/debug/schedscope" bash scripts/export-schema.sh --check
SCHEDSCOPE="$target/debug/schedscope" bash scripts/check-doc-keys.sh
cargo test --workspace --no-fail-fast -- --test-threads=1
