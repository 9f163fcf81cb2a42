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
SCHEDSCOPE=target/debug/schedscope bash scripts/export-schema.sh --check
SCHEDSCOPE=target/debug/schedscope bash scripts/check-doc-keys.sh
cargo test --workspace --no-fail-fast -- --test-threads=1
