#!/bin/sh
# Time to the TUI's first frame with lanes, and to the full data, in a real
# terminal (tmux, 200x50), and the peak RSS of the run:
#
#   crates/tui/benches/tmux-first-frame.sh BIN FILE [ARGS...]
#
# prints `first_lanes_s decoded_s full_s peak_rss_kb`. The first frame
# with lanes is the first screen with a `CPU0` lane drawn (a preview,
# cached lanes or the full data); decoded is the first screen whose status
# line no longer says `decoding` (from then on a preview shows the whole
# trace); the full data is the first status line that is neither loading
# nor a preview. ARGS go to `tui` (e.g. --no-cache). The run uses
# a fresh XDG_CACHE_HOME, so without --no-cache it is a first open that
# writes the lane cache: run it twice with the same XDG_CACHE_HOME
# (XDG=dir) for a second open.
set -eu
bin=$1
file=$2
shift 2
xdg=${XDG:-$(mktemp -d)}
out=$(mktemp)
name=ssff-$$
tmux kill-session -t "$name" 2>/dev/null || true
start=$(date +%s.%N)
tmux new-session -d -s "$name" -x 200 -y 50 \
    "XDG_CACHE_HOME=$xdg /usr/bin/time -f %M -o $out $bin tui $* $file"
first=""
decoded=""
full=""
while [ -z "$full" ]; do
    screen=$(tmux capture-pane -p -t "$name" 2>/dev/null) || break
    now=$(date +%s.%N)
    if [ -z "$first" ] && printf '%s\n' "$screen" | grep -q '^CPU0  *[^ ]'; then
        first=$(echo "$now - $start" | bc)
    fi
    status=$(printf '%s\n' "$screen" | tail -n 1)
    case "$status" in
    *decoding* | *starting* | *reading* | "") ;;
    *" | "*) [ -n "$decoded" ] || decoded=$(echo "$now - $start" | bc) ;;
    esac
    case "$status" in
    *preview* | *loading* | *from\ cache*) ;;
    *" events "*" CPUs"*) full=$(echo "$now - $start" | bc) ;;
    esac
    sleep 0.02
done
tmux send-keys -t "$name" q
while tmux has-session -t "$name" 2>/dev/null; do sleep 0.05; done
echo "$first $decoded $full $(cat "$out")"
rm -f "$out"
[ -n "${XDG:-}" ] || rm -rf "$xdg"
