"""Short tier of benchmarks/bench_scale.py: every measurement runs end to end on tiny inputs.

The full run (10^8-row Parquet, 10^9-row DuckDB table, 10^7-row CSV, a dask LocalCluster)
takes ~8 minutes and is run by hand; this checks that each of its tasks still works
(no row reports an error) and that it prints the floors and targets it compares with.
"""
import os
import subprocess
import sys

import pytest

import pydp_synopsis as ps

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

HERE = os.path.dirname(os.path.abspath(__file__))


def test_every_scale_measurement_runs_on_tiny_inputs(tmp_path):
    # the package as installed (its parent directory), not the source tree: a clean
    # checkout has no compiled core next to its sources
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__))))
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "bench_scale.py"), "--parquet-rows", "40000",
         "--csv-rows", "20000", "--pushdown", "20000,40000", "--distinct", "2000",
         "--highcard", "150000", "--highcard-sources", "duckdb,parquet",
         "--skip", "dask,highcard_rect", "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "error" not in out and "RELEASE DIFFERS" not in out, out
    assert out.count("same release") == 6, out
    for fragment in ("[floor]", "target <= 1.5x", "target <= 60 s", "flat in n",
                     "target <= 3x", "build(v, counts=c)", "plan=sort", "seal_share=0 [floor of the seal"):
        assert fragment in out, out
    assert os.listdir(tmp_path) == []                      # the generated data is removed


def test_high_cardinality_rectangles_run_on_tiny_inputs(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__))))
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "bench_scale.py"), "--highcard-rect", "30000",
         "--skip", "weighted,parquet,dask,pushdown,highcard,csv", "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "error" not in out and "RELEASE DIFFERS" not in out, out
    # the floor and four paths, each with its peak RSS split into anonymous and file pages
    assert out.count("same release") == 4 and out.count("(anon ") == 5, out
    for fragment in ("[floor]", "plan=sort", "plan=group", "Parquet via DuckDB",
                     "target RSS <= 1.5 GiB"):
        assert fragment in out, out
    assert os.listdir(tmp_path) == []


def test_the_huge_parquet_run_reports_its_spill_on_a_tiny_input(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__))))
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "bench_scale.py"), "--huge", "40000",
         "--skip", "weighted,parquet,dask,pushdown,highcard,highcard_rect,csv",
         "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "error" not in out, out
    for fragment in ("40,000 rows", "parquet: plan=sort", "target RSS <= 1.5 GiB",
                     "spill directory's peak disk use", "left behind: 0 bytes"):
        assert fragment in out, out
    assert os.listdir(tmp_path) == []
