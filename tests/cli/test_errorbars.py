"""``pydp-synopsis query --interval rigorous|calibrated``: which per-query interval the command
prints and writes, and its refusal of anything else."""
import csv

import numpy as np
import pytest

import pydp_synopsis as ps
from clirun import one_line_error, run

pytestmark = pytest.mark.integration     # the command line in subprocesses


@pytest.fixture(scope="module")
def synopsis_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("errbars")
    x = np.random.default_rng(4).integers(0, 100_000, 20_000)
    syn = ps.IntervalSynopsis.build(x, domain=(0, 99_999), epsilon=1.0, rng=ps.Rng(seed=9))
    syn.save(d / "i.pds")
    return d, syn


def test_query_prints_the_interval_asked_and_says_which(synopsis_file):
    d, syn = synopsis_file
    for method, label in (("rigorous", "(this query)"),
                          ("calibrated", "(this query, calibrated model)")):
        args = ("query", d / "i.pds", "--lo", 5000, "--hi", 5100)
        q = run(*args, "--interval", method) if method == "calibrated" else run(*args)
        assert q.returncode == 0, q.stderr
        first = q.stdout.splitlines()[0]
        bars = syn.confidence_intervals([5000], [5100], 0.95, method=method)
        assert first.endswith(f"95% interval [{bars.low[0]:.1f}, {bars.high[0]:.1f}] {label}")


def test_query_file_gets_the_calibrated_interval(synopsis_file, tmp_path):
    d, syn = synopsis_file
    lo, hi = [0, 10, 500, 70_000], [99_999, 20, 9000, 70_100]
    qf = tmp_path / "q.csv"
    qf.write_text("lo,hi\n" + "".join(f"{a},{b}\n" for a, b in zip(lo, hi)))
    out = tmp_path / "a.csv"
    q = run("query", d / "i.pds", "--queries", qf, "--output", out, "--interval", "calibrated")
    assert q.returncode == 0, q.stderr
    rows = list(csv.DictReader(open(out)))
    bars = syn.confidence_intervals(lo, hi, 0.95, method="calibrated")
    rigorous = syn.confidence_intervals(lo, hi, 0.95)
    for i, r in enumerate(rows):
        assert float(r["low"]) == bars.low[i] and float(r["high"]) == bars.high[i]
    # the calibrated interval is the narrower one on queries that cut segments
    assert np.all(bars.high - bars.low <= rigorous.high - rigorous.low + 1e-9)


def test_query_refuses_an_unknown_interval(synopsis_file):
    d, _ = synopsis_file
    q = run("query", d / "i.pds", "--lo", 1, "--hi", 2, "--interval", "exact")
    one_line_error(q, "--interval")
