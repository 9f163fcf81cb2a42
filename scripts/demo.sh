#!/usr/bin/env bash
# One-line demo on a fresh machine: install prerequisites, build, record the
# bundled ebizzy-like workload system-wide and print the full report.
# Usage: scripts/demo.sh [SECONDS]   (needs root for perf_event_open + tracefs)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --workspace --bins
exec target/release/schedscope demo --seconds "${1:-5}"
