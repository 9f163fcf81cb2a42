#!/usr/bin/env bash
# Install what schedscope's build, demo and tests need on a Debian machine,
# and make tracefs available. Idempotent; safe to run again.
set -euo pipefail

need_apt=()
command -v perf >/dev/null 2>&1 || need_apt+=(linux-perf)
command -v hackbench >/dev/null 2>&1 || need_apt+=(rt-tests)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
command -v trace-cmd >/dev/null 2>&1 || need_apt+=(trace-cmd)
if [ "${#need_apt[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "setup: installing ${need_apt[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        echo "setup: missing ${need_apt[*]}; install them with: sudo apt-get install ${need_apt[*]}" >&2
    fi
fi

# Python clients of the export tests (crates/cli/tests/export_*.rs): pyarrow,
# DuckDB, DataFusion and Spark (pyspark runs on the installed Java 17).
if command -v python3 >/dev/null 2>&1; then
    if ! python3 -c 'import pyarrow, duckdb, datafusion, pyspark' >/dev/null 2>&1; then
        echo "setup: installing pyarrow duckdb datafusion pyspark (pip)" >&2
        python3 -m pip install -q pyarrow duckdb datafusion pyspark >&2 \
            || echo "setup: pip install failed; the export tests need pyarrow duckdb datafusion pyspark" >&2
    fi
    if ! command -v java >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
        echo "setup: installing a Java runtime for pyspark" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null \
            || echo "setup: no Java runtime; the Spark export test needs one" >&2
    fi
fi

# tracefs: the collector mounts it itself when run as root, but the tests
# also read format files directly.
if [ ! -e /sys/kernel/tracing/events ]; then
    if [ "$(id -u)" -eq 0 ]; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
    fi
fi
if [ -e /sys/kernel/tracing/events ]; then
    echo "setup: tracefs at /sys/kernel/tracing" >&2
else
    echo "setup: tracefs is not mounted (run as root: mount -t tracefs nodev /sys/kernel/tracing); tests that record will skip" >&2
fi
