"""``pydp-synopsis plot`` and :mod:`pydp_synopsis.plot`: each picture is drawn from releases
only, written as a PNG that is not blank; a missing matplotlib is one line, before any work."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import plot
from clirun import PACKAGE_PARENT, one_line_error, run

pytestmark = pytest.mark.integration     # the command line in subprocesses, matplotlib

pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402


def assert_picture(path, min_size=(400, 300)):
    """A real picture: a PNG of some size with many distinct, spread-out pixels."""
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    img = imread(path)
    h, w = img.shape[:2]
    assert w >= min_size[0] and h >= min_size[1]
    rgb = img[..., :3].reshape(-1, 3)
    assert rgb.std(axis=0).max() > 0.05                      # not one flat colour
    assert len(np.unique((rgb * 255).astype(np.uint8), axis=0)) > 50
    # ink in every quarter of the frame's width (the plot spans it, not a corner)
    dark = (img[..., :3].mean(axis=2) < 0.9)
    for part in np.array_split(dark, 4, axis=1):
        assert part.any()


@pytest.fixture(scope="module")
def data():
    gen = np.random.default_rng(5)
    lat = np.clip(gen.normal(40e6, 5e6, 30_000), -90e6, 90e6).astype(np.int64)
    lon = np.clip(gen.normal(-95e6, 12e6, 30_000), -180e6, 180e6).astype(np.int64)
    return lat, lon


def test_interval_picture(tmp_path, data):
    lat, _ = data
    syn = ps.IntervalSynopsis.build(lat, domain=(-90_000_000, 90_000_000), epsilon=1.0,
                                    rng=ps.Rng(seed=1))
    fig = plot.plot_interval(syn, tmp_path / "i.png", scale="1e6")
    assert_picture(tmp_path / "i.png")
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert 0 < lo < 40 < hi < 70             # the window follows the private mass, in user units
    assert "epsilon = 1" in ax.get_title()
    syn.save(tmp_path / "i.pds")
    p = run("plot", tmp_path / "i.pds", "-o", tmp_path / "cli.png", "--scale", "1e6",
            "--range", "-10:80", "--bins", 50)
    assert p.returncode == 0, p.stderr
    assert_picture(tmp_path / "cli.png")


def test_rectangle_heat_map(tmp_path, data):
    lat, lon = data
    syn = ps.RectangleSynopsis.build(np.column_stack([lat, lon]),
                                     domain=[(-90_000_000, 90_000_000), (-180_000_000, 180_000_000)],
                                     epsilon=1.0, rng=ps.Rng(seed=2))
    syn.save(tmp_path / "r.pds")
    p = run("plot", tmp_path / "r.pds", "-o", tmp_path / "r.png", "--scale", "1e6")
    assert p.returncode == 0, p.stderr and "heat map" in p.stdout
    assert_picture(tmp_path / "r.png")
    fig = plot.plot_rectangle(syn, bins=20)
    image = fig.axes[0].get_images()[0].get_array()
    assert image.shape == (20, 20) and float(image.max()) > 0 and float(image.min()) >= 0


def test_counter_running_count_with_band(tmp_path):
    ckpt, rel = tmp_path / "c.ckpt", tmp_path / "rel.txt"
    stream = "".join(f"{b}\n" for b in np.random.default_rng(2).integers(0, 2, 3000))
    with open(rel, "w") as fh:
        p = subprocess.run([sys.executable, "-m", "pydp_synopsis.cli", "count-stream", "--horizon",
                            "5000", "--epsilon", "1", "--checkpoint", str(ckpt)], input=stream,
                           stdout=fh, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = run("plot", ckpt, "--releases", rel, "-o", tmp_path / "c.png")
    assert out.returncode == 0, out.stderr
    assert_picture(tmp_path / "c.png")
    one_line_error(run("plot", ckpt, "-o", tmp_path / "x.png"), "--releases")
    # the band is the rigorous per-release interval: it holds the truth nearly always
    c = ps.KaryTreeCounter(horizon=5000, epsilon=1.0, rng=ps.Rng(seed=3))
    xs = np.random.default_rng(2).integers(0, 2, 3000)
    releases = c.update_many(xs)
    half = plot._counter_tail(c, np.arange(1, 3001), 0.95)
    assert np.all(half >= 1.96 * c.std(np.arange(1, 3001)))
    assert np.mean(np.abs(releases - np.cumsum(xs)) <= half) >= 0.95
    fig = plot.plot_counter(c, releases)
    assert len(fig.axes[0].collections) == 1          # the band


def test_sparse_counter_releases_are_drawn_as_steps(tmp_path):
    ckpt, rel = tmp_path / "s.ckpt", tmp_path / "rel.txt"
    positions = "".join(f"{p}\n" for p in range(1, 10**6, 997))
    with open(rel, "w") as fh:
        p = subprocess.run([sys.executable, "-m", "pydp_synopsis.cli", "count-stream", "--horizon",
                            str(2**40), "--epsilon", "1", "--counter", "sparse", "--positions",
                            "--checkpoint", str(ckpt)], input=positions, stdout=fh,
                           stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = run("plot", ckpt, "--releases", rel, "-o", tmp_path / "s.png")
    assert out.returncode == 0, out.stderr
    assert_picture(tmp_path / "s.png")


NO_MATPLOTLIB = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("no matplotlib")
sys.meta_path.insert(0, Block())
from pydp_synopsis.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("args", [["demo", "--plot", "{d}/demo.png"],
                                  ["plot", "{d}/nothing.pds", "-o", "{d}/p.png"]])
def test_missing_matplotlib_is_one_line_before_any_work(tmp_path, args):
    args = [a.format(d=tmp_path) for a in args]
    p = subprocess.run([sys.executable, "-c", NO_MATPLOTLIB, *args], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT), timeout=120,
                       cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.strip().splitlines() == [
        f"pydp-synopsis: error: {'--plot' if args[0] == 'demo' else 'plot'} needs matplotlib: "
        "pip install 'pydp-synopsis[plot]'"]
    assert p.stdout == ""                     # the demo did not run first
    assert not any(tmp_path.iterdir())


def test_pictures_speak_the_columns_units(tmp_path):
    """Date and decimal columns: the queries go in the columns' units (the plot reads its
    own answers back exactly) and the axes carry the names and the units."""
    pd = pytest.importorskip("pandas")
    gen = np.random.default_rng(5)
    days = pd.Series(pd.Timestamp("2001-01-01")
                     + pd.to_timedelta(gen.integers(0, 365, 5000), unit="D"), name="day")
    syn = ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-12-31"), epsilon=1,
                                    rng=ps.Rng(seed=3))
    fig = plot.plot_interval(syn, str(tmp_path / "days.png"), bins=50)
    assert_picture(tmp_path / "days.png")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "day"
    left, right = ax.get_xlim()            # matplotlib dates: days since 1970-01-01
    assert int(left) == (np.datetime64("2001-01-01") - np.datetime64("1970-01-01")).astype(int)
    pts = np.column_stack([gen.integers(0, 9000, 3000), gen.integers(-1800, 1800, 3000)])
    rect = ps.RectangleSynopsis.build(pts / 100, domain=[("0", "90"), ("-18", "18")], epsilon=1,
                                      columns=["lat", "lon"], scale=100, rng=ps.Rng(seed=4))
    fig = plot.plot_rectangle(rect, str(tmp_path / "r.png"), bins=20)
    assert_picture(tmp_path / "r.png")
    ax = fig.axes[0]
    # a map, not its transpose: the longitude-like axis on x (plot.map_axes)
    assert ax.get_xlabel() == "axis 1: lon" and ax.get_ylabel() == "axis 0: lat"
    x0, x1 = ax.get_xlim()
    assert -18.01 <= x0 < x1 <= 18.01
