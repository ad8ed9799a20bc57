"""Short tier of benchmarks/bench_category_pushdown.py: every case runs on a tiny table and
both plans release the same numbers."""
import os
import subprocess
import sys

import pytest

import pydp_synopsis as ps

pytest.importorskip("duckdb")
HERE = os.path.dirname(os.path.abspath(__file__))


def test_category_pushdown_bench_runs_and_plans_agree(tmp_path):
    package = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))
    env = dict(os.environ, PYTHONPATH=package)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "bench_category_pushdown.py"),
                           "--rows", "3000", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in proc.stdout.splitlines() if r.startswith("| sqlite") or
            r.startswith("| duckdb")]
    assert len(rows) == 4 and all(r.rstrip().endswith("| yes |") for r in rows), proc.stdout
