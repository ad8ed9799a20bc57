"""Dask collections on a distributed.LocalCluster with worker processes: the same release as
in memory (shards=1 and sharded alike), derived streams, bad data refused before any budget."""
import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis.errors import InputError
from pydp_synopsis.shards import shard_domains
from clirun import run

pytestmark = pytest.mark.integration     # a dask LocalCluster

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")

DOMAIN = [(0, 999), (-500, 499)]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def data():
    gen = np.random.default_rng(21)
    x, y = gen.integers(0, 1000, 6000), gen.integers(-500, 500, 6000)
    x[:700] = 12
    return x, y


def record(syn):
    """The released numbers and parameters; the column names a source carries (kept in
    its synopsis's ``columns``, an unnamed array has none) left out."""
    kind, meta, arrays, _ = syn._to_record()
    meta = dict(meta)
    if all(c["kind"] == "integer" for c in meta.get("columns", [])):
        meta.pop("columns", None)
    return kind, meta, {k: v.tolist() for k, v in arrays.items()}


@pytest.mark.parametrize("shards", [None, 3])
def test_collections_release_what_memory_releases(client, data, shards):
    x, y = data
    frame = dd.from_pandas(pd.DataFrame({"x": x, "y": y}), npartitions=5)
    expect = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=5),
                                       shards=shards)
    collections = (da.from_array(x, chunks=1300), frame["x"]) if shards is None else (frame["x"],)
    for coll in collections:
        got = ps.IntervalSynopsis.build(coll, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=5),
                                        shards=shards)
        assert record(got) == record(expect)
    points = np.column_stack([x, y])
    structure = "multitree" if shards else "adaptive"
    expect = ps.RectangleSynopsis.build(points, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=6),
                                        structure=structure, shards=shards)
    coll = frame if shards else da.from_array(points, chunks=(1300, 1))
    got = ps.RectangleSynopsis.build(coll, domain=DOMAIN, epsilon=1, rng=ps.Rng(seed=6),
                                     structure=structure, shards=shards)
    assert record(got) == record(expect)


def test_sharded_partitions_seal_every_shard_end(data):
    x, _ = data
    for k in (2, 5):
        part = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=k),
                                         shards=k).partition
        assert {hi for _, hi in shard_domains(DOMAIN[0], k)} <= set(part.ends.tolist())
        # PrivTree (the default): each shard's tree starts at its depth in the whole
        # tree, so a leaf's weight bound is never above one tree's at the same depth
        one = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=k))
        assert np.all(part.depth_weight_bounds() <= one.partition.depth_weight_bounds())
        # DNRR: the same threshold, hence the same weight bound, as one partition
        part = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=k),
                                         shards=k, partition="dnrr").partition
        assert {hi for _, hi in shard_domains(DOMAIN[0], k)} <= set(part.ends.tolist())
        one = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=k),
                                        partition="dnrr")
        assert part.threshold == one.partition.threshold
        assert part.interior_weight_bound() == one.partition.interior_weight_bound()


def test_shards_draw_fresh_streams_each_build(data):
    """Two sharded builds from one generator share no noise (fresh keys per build)."""
    x, _ = data
    rng = ps.Rng(seed=9)
    a = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=rng, shards=4)
    b = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=rng, shards=4)
    assert a.partition != b.partition


def test_derived_streams():
    parent, fresh = ps.Rng(seed=3), ps.Rng(seed=3)
    c1, c2 = parent.derive(7), ps.Rng(seed=3).derive(7)
    assert c1.random_uint64(4).tolist() == c2.random_uint64(4).tolist()
    assert parent.random_uint64() == fresh.random_uint64()          # the parent did not move
    words = {tuple(parent.derive(i).random_uint64(2).tolist()) for i in range(50)}
    assert len(words) == 50
    assert parent.derive(2**64 - 1).seeded and not ps.Rng().derive(0).seeded
    with pytest.raises(ValueError):
        parent.derive(-1)


@pytest.mark.parametrize("frame, fragments", [
    (pd.DataFrame({"x": [1.0, None, 3.0]}), ["column 'x' holds NULL values"]),
    (pd.DataFrame({"x": pd.array([1, None, 3], dtype="Int64")}), ["column 'x' holds NULL"]),
    (pd.DataFrame({"x": [1.5, 2.0, 3.0]}), ["column 'x'", "give scale="]),
    (pd.DataFrame({"x": [1, 2000, 3]}), ["column 'x' must lie in the domain [0, 999]"]),
    (pd.DataFrame({"x": ["1", "b", "3"]}), ["column 'x'", "not a number"]),
])
def test_bad_data_refused_naming_the_column_before_any_budget(client, frame, fragments):
    budget, rng, fresh = ps.Budget(3), ps.Rng(seed=1), ps.Rng(seed=1)
    with pytest.raises((InputError, ps.DomainError)) as info:
        ps.IntervalSynopsis.build(dd.from_pandas(frame, npartitions=2), domain=DOMAIN[0],
                                  epsilon=1, rng=rng, budget=budget, shards=2)
    text = str(info.value)
    assert "\n" not in text and all(f in text for f in fragments)
    assert "2000" not in text
    assert budget.remaining == 3 and rng.random_uint64() == fresh.random_uint64()


def test_command_line_on_a_scheduler(client, data, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pa = pytest.importorskip("pyarrow")
    x, y = data
    (tmp_path / "pq").mkdir()
    for i in range(3):
        pq.write_table(pa.table({"x": x[i::3], "y": y[i::3]}), tmp_path / "pq" / f"{i}.parquet")
    out = tmp_path / "s.pds"
    proc = run("build", "--input", tmp_path / "pq", "--engine", "dask", "--scheduler",
               client.scheduler.address, "--shards", 2, "--columns", "x,y",
               "--domain=0:999,-500:499", "--epsilon", 1, "--seed", 4, "--output", out)
    assert proc.returncode == 0, proc.stderr
    order = np.concatenate([np.arange(i, x.size, 3) for i in range(3)])
    expect = ps.RectangleSynopsis.build(np.column_stack([x[order], y[order]]), domain=DOMAIN,
                                        epsilon=1, rng=ps.Rng(seed=4), shards=2,
                                        columns=["x", "y"])   # the command line records names
    assert record(ps.load(out)) == record(expect)


def test_a_scheduler_that_is_down_is_named(tmp_path):
    from pydp_synopsis.sources.dask import dask_files

    (tmp_path / "a.csv").write_text("x\n1\n")
    src = dask_files(str(tmp_path / "a.csv"), ["x"], scheduler="tcp://127.0.0.1:9")
    budget = ps.Budget(1)
    with pytest.raises(InputError, match="cannot connect to the dask scheduler tcp://127.0.0.1:9"):
        ps.IntervalSynopsis.build(src, domain=(0, 9), epsilon=1, budget=budget)
    assert budget.remaining == 1


def _die_once(frame, marker):
    """Kill this worker process the first time any partition runs (a lost worker)."""
    import os

    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return frame


def _die_always(frame):
    import os

    os._exit(1)


def test_a_lost_worker_is_retried_and_the_release_is_unchanged(client, data, tmp_path):
    x, _ = data
    frame = dd.from_pandas(pd.DataFrame({"x": x}), npartitions=4)
    frame = frame.map_partitions(_die_once, str(tmp_path / "died"), meta={"x": "i8"})
    got = ps.IntervalSynopsis.build(frame["x"], domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=8),
                                    shards=2)
    assert (tmp_path / "died").exists()                      # a worker really died
    expect = ps.IntervalSynopsis.build(x, domain=DOMAIN[0], epsilon=1, rng=ps.Rng(seed=8),
                                       shards=2)
    assert record(got) == record(expect)


def test_workers_dying_on_every_retry_fail_cleanly_before_any_budget(data):
    import dask

    x, _ = data
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        frame = dd.from_pandas(pd.DataFrame({"x": x}), npartitions=3)
        frame = frame.map_partitions(_die_always, meta={"x": "i8"})
        budget, rng, fresh = ps.Budget(2), ps.Rng(seed=2), ps.Rng(seed=2)
        with pytest.raises(InputError, match="workers died on every retry; nothing was released"):
            ps.IntervalSynopsis.build(frame["x"], domain=DOMAIN[0], epsilon=1, rng=rng,
                                      budget=budget, shards=2)
    assert budget.remaining == 2 and rng.random_uint64() == fresh.random_uint64()
