# Timing helpers shared by the benchmark scripts (source this file).
# Before sourcing, set `tmp` (a scratch directory) and `bench_name` (the
# prefix of error messages).

# run1 NAME CMD...: one run of CMD (stdout discarded); appends its wall time
# (s, nanosecond clock around the run) to $tmp/NAME.wall, its peak RSS
# (KiB, GNU time's maxrss) to $tmp/NAME.rss and its user+sys CPU time (s)
# to $tmp/NAME.cpu. Exits 1, printing CMD's stderr, when CMD fails.
run1() {
    local name=$1; shift
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f '%M %U %S' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || {
        echo "$bench_name: $name failed:" >&2; cat "$tmp/err" >&2; exit 1; }
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f\n", (b - a) / 1e9}' >> "$tmp/$name.wall"
    tail -1 "$tmp/t" | awk '{print $1}' >> "$tmp/$name.rss"
    tail -1 "$tmp/t" | awk '{printf "%.2f\n", $2 + $3}' >> "$tmp/$name.cpu"
}

# stats NAME: sets best_wall, med_wall (s), peak_rss (KiB) and med_cpu
# (median user+sys s) of the runs of NAME.
stats() {
    best_wall=$(sort -n "$tmp/$1.wall" | head -1)
    med_wall=$(sort -n "$tmp/$1.wall" | awk '{w[NR]=$1} END{print w[int((NR+1)/2)]}')
    peak_rss=$(sort -n "$tmp/$1.rss" | tail -1)
    med_cpu=$(sort -n "$tmp/$1.cpu" | awk '{w[NR]=$1} END{print w[int((NR+1)/2)]}')
}
