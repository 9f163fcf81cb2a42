#!/usr/bin/env bash
# Run the whole schedscope test suite (the command README.md and CI use).
# As root with perf installed, the tests record real traces and compare with
# perf script / perf sched; otherwise those tests print why they skip.
# Tests run one at a time: several record system-wide, and a concurrent
# test would become part of what they measure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --workspace --all-targets
cargo test --workspace --no-fail-fast -- --test-threads=1
