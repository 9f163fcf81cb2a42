"""Read every table of a schedscope Parquet export with pyarrow and check it
against `perf script` output of the same file.

usage: check_pyarrow.py ROOT PERF_SCRIPT_TXT
Prints one JSON object: rows per table, writer settings seen, and the
rows of sched_switch / sched_wakeup / sched_migrate_task /
sched_stat_runtime compared field for field with the perf script lines
(matched by cpu and timestamp).
"""
import json
import os
import re
import sys

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

root, script = sys.argv[1], sys.argv[2]
out = {"rows": {}, "bad_types": [], "files": 0, "settings": {}}
tables = {}
with open(os.path.join(root, "_schedscope", "schema.json")) as f:
    delta_cols = {
        t["name"]: [c["name"] for c in t["cols"]
                    if c["type"] == "i64" and (c["unit"] == "ns" or c["name"] == "event_id")]
        for t in json.load(f)["tables"]
    }
for name in sorted(os.listdir(root)):
    if name.startswith("_"):
        continue
    d = ds.dataset(os.path.join(root, name), format="parquet", partitioning="hive")
    t = d.to_table()
    tables[name] = t
    out["rows"][name] = t.num_rows
    for f in t.schema:
        ty = f.type
        if pa.types.is_unsigned_integer(ty) or pa.types.is_timestamp(ty):
            out["bad_types"].append(f"{name}.{f.name}: {ty}")
    for frag in d.get_fragments():
        out["files"] += 1
        md = pq.ParquetFile(frag.path).metadata
        kv = {k.decode(): v.decode() for k, v in (md.metadata or {}).items()}
        s = {
            "schema_version": kv.get("schema_version"),
            "table": kv.get("table"),
            "trace_id": kv.get("trace_id"),
            "format_version": md.format_version,
        }
        if md.num_row_groups > 0:
            rg = md.row_group(0)
            cols = {rg.column(i).path_in_schema: rg.column(i) for i in range(rg.num_columns)}
            s["compression"] = sorted({c.compression for c in cols.values()})
            # Every Int64 ns column and event_id: DELTA_BINARY_PACKED, no dictionary.
            s["delta_encodings"] = {
                c: sorted(cols[c].encodings) for c in delta_cols.get(name, []) if c in cols
            }
            if "ts" in cols:
                s["ts_encodings"] = sorted(cols["ts"].encodings)
                s["ts_statistics"] = cols["ts"].statistics is not None and cols["ts"].statistics.has_min_max
            s["sorting_columns"] = [c.column_index for c in (rg.sorting_columns or [])]
            # The declared order holds.
            keys = [rg.column(i).path_in_schema for i in s["sorting_columns"]]
            if keys:
                part = pq.read_table(frag.path, columns=keys).to_pylist()
                vals = [tuple((v is not None, v) for v in (r[k] for k in keys)) for r in part]
                s["sorted"] = all(a <= b for a, b in zip(vals, vals[1:]))
            s["max_row_group_rows"] = max(md.row_group(i).num_rows for i in range(md.num_row_groups))
        out["settings"][name] = s
        out["partition"] = frag.path.split(name + "/", 1)[1].rsplit("/", 1)[0]

line_re = re.compile(r"^\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s+(.*)$")
sw_re = re.compile(
    r"prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) prev_state=(\S+) ==> "
    r"next_comm=(.*) next_pid=(-?\d+) next_prio=(-?\d+)$"
)
wk_re = re.compile(r"comm=(.*) pid=(-?\d+) prio=(-?\d+) target_cpu=(\d+)$")
mg_re = re.compile(r"comm=(.*) pid=(-?\d+) prio=(-?\d+) orig_cpu=(\d+) dest_cpu=(\d+)$")
sr_re = re.compile(r"comm=(.*) pid=(-?\d+) runtime=(\d+) \[ns\](?: vruntime=(\d+) \[ns\])?$")


def index(t, keys):
    rows = t.to_pylist()
    idx = {}
    for r in rows:
        idx.setdefault(tuple(r[k] for k in keys), []).append(r)
    return idx


sw = index(tables["sched_switch"], ["cpu", "ts"])
wk = index(tables["sched_wakeup"], ["cpu", "ts", "kind"])
mg = index(tables["sched_migrate"], ["cpu", "ts"])
sr = index(tables["sched_stat_runtime"], ["cpu", "ts"])
checked = {"sched_switch": 0, "sched_wakeup": 0, "sched_migrate": 0, "sched_stat_runtime": 0}
mismatches = []
with open(script) as f:
    for line in f:
        m = line_re.match(line.rstrip("\n"))
        if not m:
            continue
        cpu, ts = int(m[1]), int(m[2]) * 1_000_000_000 + int(m[3])
        ev, rest = m[4], m[5]
        if ev == "sched:sched_switch":
            g = sw_re.match(rest)
            want = {
                "prev_comm": g[1], "prev_tid": int(g[2]), "prev_prio": int(g[3]),
                "prev_state": g[4], "next_comm": g[5], "next_tid": int(g[6]),
                "next_prio": int(g[7]),
            }
            cands, table = sw.get((cpu, ts), []), "sched_switch"
        elif ev in ("sched:sched_wakeup", "sched:sched_waking", "sched:sched_wakeup_new"):
            g = wk_re.match(rest)
            want = {"comm": g[1], "tid": int(g[2]), "prio": int(g[3]), "target_cpu": int(g[4])}
            kind = ev.split(":sched_")[1]
            cands, table = wk.get((cpu, ts, kind), []), "sched_wakeup"
        elif ev == "sched:sched_migrate_task":
            g = mg_re.match(rest)
            want = {"comm": g[1], "tid": int(g[2]), "orig_cpu": int(g[4]), "dest_cpu": int(g[5])}
            cands, table = mg.get((cpu, ts), []), "sched_migrate"
        elif ev == "sched:sched_stat_runtime":
            g = sr_re.match(rest)
            want = {
                "comm": g[1], "tid": int(g[2]), "runtime_ns": int(g[3]),
                "vruntime_ns": int(g[4]) if g[4] is not None else None,
            }
            cands, table = sr.get((cpu, ts), []), "sched_stat_runtime"
        else:
            continue
        checked[table] += 1
        if not any(all(c[k] == v for k, v in want.items()) for c in cands):
            mismatches.append({"line": line.strip(), "rows": cands})
out["checked"] = checked
out["mismatches"] = mismatches[:10]
out["mismatch_count"] = len(mismatches)
print(json.dumps(out, default=str))
