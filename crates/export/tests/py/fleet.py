"""Run docs/export.md's fleet query (wasted idle % per host and run) with one
engine over a schedscope Parquet root; each engine discovers the hive
partitions (host, date, run) itself.

usage: fleet.py duckdb|spark|datafusion ROOT
Prints {"engine": ..., "rows": [[host, run, path, wasted_ns, span_ns, cpus, pct], ...]}.
"""
import json
import sys

engine, root = sys.argv[1], sys.argv[2]

# The fleet query of docs/export.md ("Fleet queries"); `trace` and `idle_gap`
# are the two tables registered from ROOT/trace and ROOT/idle_gap.
QUERY = """
SELECT t.host, t.run, t.path,
       coalesce(sum(g.dur), 0) AS wasted_ns,
       t.ts_end - t.ts_start AS span_ns,
       t.num_cpus AS cpus,
       100.0 * CAST(coalesce(sum(g.dur), 0) AS DOUBLE)
             / CAST((t.ts_end - t.ts_start) * t.num_cpus AS DOUBLE) AS wasted_idle_pct
FROM trace t LEFT JOIN idle_gap g ON g.run = t.run
GROUP BY t.host, t.run, t.path, t.ts_end, t.ts_start, t.num_cpus
ORDER BY t.host, t.run
"""

if engine == "duckdb":
    import duckdb

    con = duckdb.connect()
    for t in ("trace", "idle_gap"):
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{root}/{t}/**/*.parquet', hive_partitioning=true)"
        )
    rows = con.execute(QUERY).fetchall()
elif engine == "spark":
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("schedscope-fleet")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in ("trace", "idle_gap"):
        spark.read.parquet(f"{root}/{t}").createOrReplaceTempView(t)
    rows = [tuple(r) for r in spark.sql(QUERY).collect()]
    spark.stop()
elif engine == "datafusion":
    from datafusion import SessionContext

    ctx = SessionContext()
    for t in ("trace", "idle_gap"):
        ctx.sql(f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET LOCATION '{root}/{t}/'").collect()
    rows = [tuple(r.values()) for r in ctx.sql(QUERY).to_pylist()]
else:
    sys.exit(f"unknown engine {engine}")

print(json.dumps({"engine": engine, "rows": [[str(v) if not isinstance(v, (int, float, type(None))) else v for v in r] for r in rows]}))
