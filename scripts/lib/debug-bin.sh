# Shared by the scripts that check or generate docs from the binary's
# output (source this file from the repository root): sets `bin` to
# $SCHEDSCOPE, or builds the debug binary of this tree, and `tmp` to a
# scratch directory removed on exit.
bin="${SCHEDSCOPE:-}"
if [ -z "$bin" ]; then
    cargo build -q -p schedscope >&2
    bin=target/debug/schedscope
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
