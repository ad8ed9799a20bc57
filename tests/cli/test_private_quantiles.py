"""``pydp-synopsis quantiles``: private_quantiles from the command line, the same numbers as
the API for a seed, decimals by --scale, one-line errors with exit status 2."""
import csv
import io

import numpy as np
import pytest

import pydp_synopsis as ps
from clirun import one_line_error, run

pytestmark = pytest.mark.integration     # the command line in subprocesses


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("pq") / "t.csv"
    x = np.random.default_rng(0).integers(0, 1000, 3000)
    path.write_text("a,b\n" + "".join(f"{v},{v / 100:.2f}\n" for v in x))
    return path, x


def rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_the_same_numbers_as_the_api(table):
    path, x = table
    proc = run("quantiles", "--input", path, "--column", "a", "--domain", "0:999",
               "--epsilon", "1", "--q", "0.75,0.25,0.5", "--candidates", "512", "--seed", "4")
    assert proc.returncode == 0, proc.stderr
    got = rows(proc.stdout)
    want = ps.private_quantiles(x, [0.75, 0.25, 0.5], domain=(0, 999), epsilon=1,
                                candidates=512, rng=ps.Rng(seed=4))
    assert got == [["q", "value"]] + [[q, str(v)] for q, v in zip(("0.75", "0.25", "0.5"),
                                                                  want.tolist())]


def test_decimals_by_scale(table):
    path, x = table
    proc = run("quantiles", "--input", path, "--column", "b", "--domain", "0:9.99",
               "--scale", "1e2", "--epsilon", "2", "--q", "0.5", "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    (q, value), = rows(proc.stdout)[1:]
    want = ps.private_quantiles(x, 0.5, domain=(0, 999), epsilon=2, rng=ps.Rng(seed=1))
    assert q == "0.5" and value == f"{int(want) / 100:.2f}"


@pytest.mark.parametrize("args,fragments", [
    (["--q", "1.5"], ["--q must be in [0, 1]"]),
    (["--q", "0.5,x"], ["--q: 'x' is not a number"]),
    (["--q", "0.5", "--epsilon", "0"], ["--epsilon must be in (0, 2**40]"]),
    (["--q", "0.5", "--candidates", "0"], ["--candidates must be in [1, 1048576]"]),
    (["--q", "0.5", "--candidates", str(2 ** 20 + 1)], ["--candidates must be in"]),
    (["--q", "0.5", "--domain", "0:99"], ["outside"]),
    (["--q", "0.5", "--column", "zz"], ["no column 'zz'"]),
])
def test_bad_input_is_one_line_and_exit_2(table, args, fragments):
    path, x = table
    base = {"--input": str(path), "--column": "a", "--domain": "0:999", "--epsilon": "1"}
    given = dict(zip(args[::2], args[1::2]))
    argv = ["quantiles"] + [a for k, v in {**base, **given}.items() for a in (k, v)]
    line = one_line_error(run(*argv), *fragments)
    for value in set(x.tolist()) - set(range(0, 10)):
        assert f" {value} " not in f" {line} "                  # no data value shown
