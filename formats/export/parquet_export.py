# prof export --format parquet: the Python half. prof (collector/export_parquet.c)
# runs this with a python that has pyarrow and writes to its standard input:
#   "LIBPROF-PARQUET 1\n", "report N\n" + N bytes of `prof report --format json`,
#   "events\n" + the capture's events as CSV (header first), to the end.
# It writes OUT/{events,processes,captures,rows,ranks,steps,across_ranks}.parquet
# (docs/FORMATS.md, "Parquet"). The events stream through in record batches: memory does
# not grow with the capture. Exit status 3: pyarrow is missing.
import sys
sys.path[:] = [p for p in sys.path if p]  # python -c: not the user's directory's modules
import json  # noqa: E402
import os  # noqa: E402

ROW_GROUP = 1 << 16  # events per Parquet row group (what it holds bounds the peak)


def main():
    out = sys.argv[1]
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        return 3  # prof says so, in one line
    inp = sys.stdin.buffer
    if inp.readline() != b"LIBPROF-PARQUET 1\n":
        sys.stderr.write("unexpected input (not from prof export)\n")
        return 2
    head = inp.readline().split()
    report = json.loads(inp.read(int(head[1])))
    if inp.readline() != b"events\n":
        sys.stderr.write("unexpected input: no events\n")
        return 2

    def table(name, schema, rows):
        cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
        pq.write_table(pa.table(cols, schema=schema), os.path.join(out, name + ".parquet"))

    i32, i64, s, f64 = pa.int32(), pa.int64(), pa.string(), pa.float64()
    sch = lambda *cols: pa.schema([pa.field(n, t) for n, t in cols])

    captures = report.get("captures") or [
        {"capture": 0, "host": report.get("host"), "command": report.get("command"),
         "clock": "same", "offset_ns": 0, "error_ns": 0, "collectives": 0}]
    table("captures", sch(("capture", i32), ("host", s), ("command", s), ("clock", s),
                          ("offset_ns", i64), ("error_ns", i64), ("collectives", i64)),
          captures)
    table("processes", sch(("capture", i32), ("pid", i64), ("ppid", i64), ("exec_seq", i32),
                           ("rank", i32), ("local_rank", i32), ("world_size", i32),
                           ("launcher", s), ("job", s), ("host", s), ("label", s),
                           ("command", s), ("exit_status", i32), ("allocations", i64),
                           ("bytes_allocated", i64), ("peak_live_bytes", i64)),
          report["processes"])
    table("rows", sch(("category", s), ("name", s), ("count", i64), ("total_ns", i64),
                      ("self_ns", i64), ("min_ns", i64), ("max_ns", i64), ("avg_ns", i64),
                      ("median_ns", i64), ("percent", f64)),
          report["rows"])
    table("across_ranks", sch(("category", s), ("name", s), ("ranks", i32), ("min_ns", i64),
                              ("median_ns", i64), ("max_ns", i64), ("slowest_rank", i32),
                              ("calls_min", i64), ("calls_max", i64)),
          report.get("across_ranks") or [])
    k = report.get("ranks") or {"ranks": [], "steps": []}
    per_rank = [dict(st, rank=r["rank"], pid=r["pid"], step=j + 1)
                for r in k["ranks"] for j, st in enumerate(r["steps"])]
    table("ranks", sch(("rank", i32), ("pid", i64), ("step", i32), ("start_ns", i64),
                       ("end_ns", i64), ("collective_ns", i64), ("wait_ns", i64),
                       ("compute_ns", i64)), per_rank)
    table("steps", sch(("step", i32), ("slowest_rank", i32), ("slowest_compute_ns", i64),
                       ("median_compute_ns", i64), ("most_waiting_rank", i32),
                       ("most_wait_ns", i64)), k["steps"])

    ev_schema = sch(("capture", i32), ("rank", i32), ("pid", i64), ("tid", i64),
                    ("type", s), ("category", s), ("name", s), ("start_ns", i64),
                    ("dur_ns", i64), ("depth", pa.int16()), ("bytes", i64), ("value", f64),
                    ("comm_size", i32), ("peer", i32))
    # 1 MiB blocks: larger ones tripled the peak (490 MB for 8 MiB blocks, 150 MB for
    # 1 MiB, on 6.4 M events). One thread: prof writes the CSV on the other core, and the
    # reader's own threads once ended the interpreter in std::terminate at exit (a loaded
    # machine, an empty capture)
    reader = pacsv.open_csv(
        inp, read_options=pacsv.ReadOptions(block_size=1 << 20, use_threads=False),
        convert_options=pacsv.ConvertOptions(
            column_types={f.name: f.type for f in ev_schema}, strings_can_be_null=False,
            null_values=[""], quoted_strings_can_be_null=False))
    with pq.ParquetWriter(os.path.join(out, "events.parquet"), ev_schema,
                          compression="zstd") as w:
        group, rows = [], 0
        for batch in reader:
            group.append(batch)
            rows += batch.num_rows
            if rows >= ROW_GROUP:  # row groups of a useful size for the engines
                w.write_table(pa.Table.from_batches(group, ev_schema))
                group, rows = [], 0
        if group:
            w.write_table(pa.Table.from_batches(group, ev_schema))
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)  # the files are closed: no teardown of pyarrow's threads to race with
