#!/usr/bin/env bash
# Run the whole schedscope test suite (the command README.md and CI use).
# As root with perf installed, the tests record real traces and compare with
# perf script / perf sched; otherwise those tests print why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --workspace --all-targets
cargo test --workspace --no-fail-fast -- --test-threads=2
