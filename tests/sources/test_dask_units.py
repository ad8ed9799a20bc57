"""Dask at parity with the local engines (issue 32, frictions): dates, time-zone-aware
times, decimals (``scale=`` on build or on a DaskSource), resolutions and ``dropna``
release exactly what the same pandas data release in memory under a seed; ``--engine
dask`` reads dates and decimals as ``--engine local`` does.  The synchronous scheduler
in process, a threads-only LocalCluster for the scheduler path: no worker processes."""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.sources.dask import DaskSource

pytestmark = pytest.mark.integration     # dask

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def frame():
    gen = np.random.default_rng(32)
    n = 900
    t = pd.Timestamp("2017-01-01") + pd.to_timedelta(gen.integers(0, 365 * 86400, n), unit="s")
    df = pd.DataFrame({
        "lat": [f"41.{v:06d}5" for v in gen.integers(5 * 10**5, 10**6, n)],   # ties at 1e6
        "lon": -87.9 + np.round(gen.random(n) * 0.4, 6),
        "day": t.strftime("%Y-%m-%d"),
        "ts": t.tz_localize("UTC"),
    })
    df.loc[[3, 500], "lat"] = None
    df.loc[[7], "lon"] = np.nan
    return df


def numbers(syn):
    kind, meta, arrays, _ = syn._to_record()
    return kind, meta.get("columns"), meta.get("domain", meta.get("domains")), \
        {k: v.tolist() for k, v in arrays.items()}


CASES = {
    "decimal text, scale": ("lat", dict(domain=("41.5", "42.1"), scale="1e6", dropna=True)),
    "decimal text, resolution": ("lat", dict(domain=("41.5", "42.1"), resolution="0.001",
                                             dropna=True)),
    "doubles, scale": ("lon", dict(domain=("-88", "-87.4"), scale="1e6", dropna=True)),
    "dates from text": ("day", dict(domain=("2017-01-01", "2017-12-31"))),
    "zoned times by hour": ("ts", dict(domain=("2017-01-01T00:00", "2017-12-31T23:59"),
                                       resolution="1h")),
    "zoned times as days": ("ts", dict(domain=("2017-01-01", "2017-12-31"))),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("shards", [None, 2])
def test_dask_releases_what_pandas_releases(frame, case, shards):
    col, kw = CASES[case]
    with dask.config.set(scheduler="synchronous"):
        want = ps.IntervalSynopsis.build(frame[col], epsilon=1, rng=ps.Rng(seed=5),
                                         shards=shards, **kw)
        got = ps.IntervalSynopsis.build(dd.from_pandas(frame[col], npartitions=3), epsilon=1,
                                        rng=ps.Rng(seed=5), shards=shards, **kw)
    assert numbers(got) == numbers(want)
    assert got.column == want.column and got.column.name == col


def test_rectangles_and_a_dask_source_carrying_its_scale(frame):
    kw = dict(domain=[("41.5", "42.1"), ("-88", "-87.4")], epsilon=1)
    clean = frame.dropna(subset=["lat", "lon"])
    with dask.config.set(scheduler="synchronous"):
        want = ps.RectangleSynopsis.build(clean[["lat", "lon"]], scale="1e6",
                                          rng=ps.Rng(seed=6), **kw)
        ddf = dd.from_pandas(frame[["lat", "lon"]], npartitions=4)
        got = ps.RectangleSynopsis.build(ddf, scale="1e6", dropna=True, rng=ps.Rng(seed=6),
                                         **kw)
        assert numbers(got) == numbers(want)
        src = DaskSource(dd.from_pandas(clean[["lat", "lon"]], npartitions=2), scale="1e6")
        carried = ps.RectangleSynopsis.build(src, rng=ps.Rng(seed=6), **kw)   # no scale=
    assert numbers(carried) == numbers(want)
    assert [c.name for c in carried.columns] == ["lat", "lon"]


def test_a_cluster_and_the_engine_read_dates_and_decimals(frame, tmp_path):
    distributed = pytest.importorskip("distributed")
    from clirun import run

    frame[["lat", "day"]].to_csv(tmp_path / "p.csv", index=False)
    builds = {"rect": ["--columns", "lat,day", "--domain=41.5:42.1,2017-01-01:2017-12-31",
                       "--resolution", "0.001,1d"],
              "scaled": ["--columns", "lat", "--domain=41.5:42.1", "--scale", "1e6"]}
    for name, args in builds.items():
        p = run("build", "--input", tmp_path / "p.csv", "--dropna", "--epsilon", 1, "--seed", 9,
                *args, "--output", tmp_path / f"{name}-local.pds")
        assert p.returncode == 0, p.stderr
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp://", dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        for name, args in builds.items():
            p = run("build", "--input", tmp_path / "p.csv", "--dropna", "--epsilon", 1,
                    "--seed", 9, *args, "--engine", "dask", "--scheduler",
                    cluster.scheduler_address, "--output", tmp_path / f"{name}-dask.pds")
            assert p.returncode == 0, p.stderr
        # the API on the same cluster: a dask Series of dates
        got = ps.IntervalSynopsis.build(dd.from_pandas(frame["day"], npartitions=2),
                                        domain=("2017-01-01", "2017-12-31"), epsilon=1,
                                        rng=ps.Rng(seed=5))
    want = ps.IntervalSynopsis.build(frame["day"], domain=("2017-01-01", "2017-12-31"),
                                     epsilon=1, rng=ps.Rng(seed=5))
    assert numbers(got) == numbers(want)
    for name in builds:
        assert numbers(ps.load(tmp_path / f"{name}-dask.pds")) == \
            numbers(ps.load(tmp_path / f"{name}-local.pds")), name
