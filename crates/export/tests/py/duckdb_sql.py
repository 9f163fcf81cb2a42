"""Run named SQL queries with DuckDB over a schedscope Parquet root.

usage: duckdb_sql.py ROOT < {"name": "SQL", ...}
In the SQL, `@table` stands for
read_parquet('ROOT/table/**/*.parquet', hive_partitioning=true): hive
partitioning and nothing else. Prints {"name": [[col, ...], ...]}.
"""
import json
import re
import sys

import duckdb

root = sys.argv[1]
queries = json.load(sys.stdin)
con = duckdb.connect()
out = {}
for name, sql in queries.items():
    sql = re.sub(
        r"@(\w+)",
        lambda m: f"read_parquet('{root}/{m[1]}/**/*.parquet', hive_partitioning=true)",
        sql,
    )
    rows = con.execute(sql).fetchall()
    out[name] = [[v if isinstance(v, (int, float, str, type(None))) else str(v) for v in r] for r in rows]
print(json.dumps(out))
