"""Short tier of benchmarks/bench_timing.py's secret-item table (issue #30): its statistic
finds a planted dependence and not an absent one, and every row runs end to end (no timing
is asserted)."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_timing  # noqa: E402


def test_within_round_r_finds_a_planted_shift_and_only_then():
    """Times shifted by 0.1 sd when the label is 1 give r near 0.048 (the
    within-row rank correlation of a 0.1 sd shift), with an interval holding
    it; independent labels give an interval around 0; a shift shared by a
    whole row (public: the time t) cancels; and conditioning on a public cell
    that carries the shift removes it."""
    g = np.random.default_rng(1)
    times = g.normal(size=(20000, 16))
    labels = g.integers(0, 2, (20000, 16))
    r, low, high = bench_timing.within_round_r(times + 0.1 * labels, labels, boot=100)
    assert 0.040 < low < r < high < 0.056
    r0, low0, high0 = bench_timing.within_round_r(times + 5.0 * np.arange(20000)[:, None], labels, boot=100)
    assert low0 < 0 < high0 and abs(r0) < 0.005
    public = labels.copy()                                     # the output reveals the label
    rp, lowp, highp = bench_timing.within_round_r(times + 0.1 * labels, labels, public, boot=100)
    assert np.isnan(rp) or abs(rp) < 1e-12
    assert bench_timing.verdict(-0.002, 0.003) == "ok"
    assert bench_timing.verdict(0.006, 0.01) == "LEAK" and bench_timing.verdict(-0.01, -0.005) == "LEAK"
    assert bench_timing.verdict(0.001, 0.006) == "unclear"


def test_secret_table_has_every_row(capsys):
    bench_timing.main(["--secret", "--secret-updates", "1600", "--counters", "16"])
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out[2:] if line.strip()]
    names = [name for name, *_ in bench_timing.secret_makers()]
    assert len(rows) == len(names)
    for name, line in zip(names, rows):
        assert line.startswith(name)
        assert line.split()[-1] in ("ok", "LEAK", "unclear")
        assert int(line[len(name):].split()[0]) == 1600
