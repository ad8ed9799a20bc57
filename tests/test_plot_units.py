"""Plots in the file's units (issue 32, frictions): a time axis drawn in the file's time
zone, a latitude x longitude map with longitude on x (or the axes asked for), a window
given in dates or decimals, its errors naming ``--range``."""
import zoneinfo

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import plot
from pydp_synopsis.errors import ParameterError, UsageError

pytestmark = pytest.mark.integration     # matplotlib drawing, as tests/test_plot.py

pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def chicago():
    gen = np.random.default_rng(7)
    t = pd.Series(pd.Timestamp("2017-07-01 00:00") + pd.to_timedelta(
        gen.integers(0, 86400, 2000), unit="s"), name="t").dt.tz_localize("America/Chicago")
    return ps.IntervalSynopsis.build(t, domain=("2017-07-01T00:00", "2017-07-01T23:59"),
                                     epsilon=1, rng=ps.Rng(seed=1))


@pytest.fixture(scope="module")
def places():
    gen = np.random.default_rng(8)
    pts = np.column_stack([41.6 + gen.random(3000) * 0.4, -87.9 + gen.random(3000) * 0.4])
    return ps.RectangleSynopsis.build(pts, domain=[("41.5", "42.1"), ("-88", "-87.4")],
                                      columns=["lat", "lon"], scale="1e6", epsilon=1,
                                      rng=ps.Rng(seed=2))


def test_a_time_axis_is_drawn_in_the_files_time_zone(chicago):
    fig = plot.plot_interval(chicago, bins=24, window=chicago.domain)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "t (America/Chicago)" and "UTC" not in ax.get_xlabel()
    formatter = ax.xaxis.get_major_formatter()
    assert formatter._tz == zoneinfo.ZoneInfo("America/Chicago")
    fig.canvas.draw()
    # the first tick is local midnight (05:00 UTC), written as a Chicago wall time
    first = ax.get_xticks()[0]
    import matplotlib.dates as mdates
    local = mdates.num2date(first, tz=zoneinfo.ZoneInfo("America/Chicago"))
    assert local.hour == 0 and mdates.num2date(first).hour == 5


def test_a_map_puts_longitude_on_x(places):
    ax = plot.plot_rectangle(places, bins=10).axes[0]
    assert ax.get_xlabel() == "axis 1: lon" and ax.get_ylabel() == "axis 0: lat"
    assert -88.01 < ax.get_xlim()[0] < ax.get_xlim()[1] < -87.39
    ax = plot.plot_rectangle(places, bins=10, axes=("lat", "lon")).axes[0]
    assert ax.get_xlabel() == "axis 0: lat"
    ax = plot.plot_rectangle(places, bins=10, axes=(1, 0)).axes[0]
    assert ax.get_xlabel() == "axis 1: lon"
    for bad in (("lat",), ("lat", "lat"), ("lat", "height"), (0, 5)):
        with pytest.raises(ParameterError, match="axes"):
            plot.plot_rectangle(places, bins=10, axes=bad)


def test_map_axes_heuristic():
    dec = ps.Column.decimal
    doms = [(-9000, 9000), (-18000, 18000)]
    assert plot.map_axes([dec("pickup_latitude", scale=100), dec("pickup_longitude",
                                                                  scale=100)], doms) == (1, 0)
    assert plot.map_axes([dec("lon", scale=100), dec("lat", scale=100)], doms[::-1]) == (0, 1)
    assert plot.map_axes([dec("a", scale=100), dec("b", scale=100)], doms) == (0, 1)
    # unnamed decimals: the axis reaching beyond [-90, 90] within [-180, 180] is longitude
    assert plot.map_axes([dec(scale=100), dec(scale=100)], doms) == (1, 0)
    assert plot.map_axes([ps.Column.integer("y"), ps.Column.integer("x")], doms) == (1, 0)


def test_a_window_in_dates_and_decimals(tmp_path, chicago, places):
    chicago.save(tmp_path / "t.pds")
    places.save(tmp_path / "p.pds")
    plot.plot_file(tmp_path / "t.pds", tmp_path / "t.png",
                   window=[("2017-07-01T06:00", "2017-07-01T18:00")])
    plot.plot_file(tmp_path / "p.pds", tmp_path / "p.png", bins=5,
                   window=[("-87.9", "-87.6"), ("41.6", "42")])      # x (lon), then y (lat)
    with pytest.raises(UsageError, match="^--range entry 2017-02-30:2017-03-01"):
        plot.plot_file(tmp_path / "t.pds", tmp_path / "t.png",
                       window=[("2017-02-30", "2017-03-01")])
    with pytest.raises(UsageError, match="^--range gives 1 ranges for the 2 drawn axes"):
        plot.plot_file(tmp_path / "p.pds", tmp_path / "p.png", window=[("41.6", "42")])
    with pytest.raises(UsageError, match=r"lies outside the domain \[2017-07-01T00:00:00"):
        plot.plot_file(tmp_path / "t.pds", tmp_path / "t.png",
                       window=[("2017-08-01", "2017-08-02")])
    assert plot.user_window(chicago, [("2017-06-01", "2017-07-01T11:59:59")]) == [
        (chicago.domain[0], int(chicago.column.to_int("2017-07-01T11:59:59")))]   # clipped
    with pytest.raises(UsageError, match="lo must be <= hi"):
        plot.plot_file(tmp_path / "p.pds", tmp_path / "p.png",
                       window=[("-87.6", "-87.9"), ("41.6", "42")])
    ax = plot.plot_rectangle(places, bins=5, window=plot.user_window(
        places, [("-87.9", "-87.6"), ("41.6", "42")], plot.map_axes(
            places.columns, places.domain))).axes[0]
    assert ax.get_xlim() == pytest.approx((-87.9, -87.6))


def test_plot_command_takes_dates_decimals_and_axes(tmp_path, places):
    from clirun import run

    places.save(tmp_path / "p.pds")
    p = run("plot", tmp_path / "p.pds", "-o", tmp_path / "p.png", "--range=-87.9:-87.6,41.6:42",
            "--axes", "lon,lat", "--bins", 5)
    assert p.returncode == 0, p.stderr
    p = run("plot", tmp_path / "p.pds", "-o", tmp_path / "p.png", "--range", "41.6:42,x:y")
    assert p.returncode == 2 and "--range" in p.stderr and "--domain" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = run("plot", tmp_path / "p.pds", "-o", tmp_path / "p.png", "--axes", "lat,depth")
    assert p.returncode == 2 and p.stderr.startswith("pydp-synopsis: error: --axes")
