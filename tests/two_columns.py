"""Two integer columns written as the same table to DuckDB, SQLite and Parquet (the
sources the plans must agree on), and a synopsis's release as plain lists."""
import sqlite3

__all__ = ["write_sources", "release"]


def write_sources(directory, names, first, second):
    """Table ``t(names[0], names[1])`` of the two arrays in ``directory``: a DuckDB file, a
    SQLite file and a Parquet file; returns their source strings by engine."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    a, b = names
    con = duckdb.connect(str(directory / "t.duckdb"))
    con.execute(f"CREATE TABLE t AS SELECT * FROM (SELECT unnest(?) AS {a}, unnest(?) AS {b})",
                [first.tolist(), second.tolist()])
    con.close()
    con = sqlite3.connect(directory / "t.db")
    con.execute(f"CREATE TABLE t ({a} INTEGER, {b} INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", zip(first.tolist(), second.tolist()))
    con.commit()
    con.close()
    pq.write_table(pa.table({a: first, b: second}), directory / "t.parquet")
    return {"duckdb": f"duckdb:///{directory / 't.duckdb'}",
            "sqlite": f"sqlite:///{directory / 't.db'}", "parquet": str(directory / "t.parquet")}


def release(syn):
    """The release (a source also records its column's name; the arrays do not)."""
    kind, meta, arrays, _ = syn._to_record()
    meta = {k: v for k, v in meta.items() if k != "columns"}
    return kind, meta, {k: v.tolist() for k, v in arrays.items()}
