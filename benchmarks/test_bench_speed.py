"""Short tier of benchmarks/bench_speed.py: every row is produced and well-formed (no timing is asserted)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_speed  # noqa: E402


def test_quick_table_has_every_row(capsys):
    bench_speed.main(["--quick", "--repeat", "1"])
    out = capsys.readouterr().out.splitlines()
    table = [line for line in out if line.startswith("| ") and not line.startswith("| what")]
    names = [line.split(" | ")[0] for line in table]
    assert len(table) == 16
    for needle in ("private_partition", "presorted", "IntervalSynopsis.build", "count_many",
                   "discrete_laplace scale 1,", "discrete_laplace scale 1e+06",
                   "KaryTreeCounter.update", "SparseStreamCounter.update",
                   "RectangleSynopsis.build", "rectangle count_many", "ceiling", "sealed cells"):
        assert any(needle in n for n in names), needle
    for line in table:
        ratio = float(line.split(" | ")[4])
        assert ratio > 0


def test_bad_repeat_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        bench_speed.main(["--repeat", "0"])
    assert e.value.code == 2
    assert "--repeat must be at least 1" in capsys.readouterr().err
