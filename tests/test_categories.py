"""Category columns (public levels), the flat level histogram, counts by level and set,
a category axis of a rectangle synopsis, save/load and the sources."""
import math
import sqlite3
from fractions import Fraction

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import sources
from pydp_synopsis.categories import MAX_LEVELS
from pydp_synopsis.errors import DomainError, FormatError, InputError, ParameterError
from pydp_synopsis.level_histogram import FLAT_MAX_LEVELS
from pydp_synopsis.persist import read_record, write_record
from stattests import assert_gof

LEVELS = ["AA", "DL", "UA", "WN"]
SECRET = "ZZ-secret-value"


def _data(n=2000, seed=0):
    g = np.random.default_rng(seed)
    return np.array(LEVELS, dtype=object)[g.integers(0, 4, n)]


def _truth(values, levels=LEVELS):
    return np.array([int(np.sum(values == lv)) for lv in levels])


# ---------------------------------------------------------------- the column
def test_codes_follow_the_users_order_and_other():
    col = ps.Column.category(["b", "a", "c"], other="rest", name="x")
    assert col.to_int(np.array(["a", "c", "q", "b", "a"])).tolist() == [1, 2, 3, 0, 1]
    assert col.all_levels == ("b", "a", "c", "rest")
    assert col.values(np.array([3, 0])).tolist() == ["rest", "b"]
    assert col.format(1) == "a"
    assert col.describe() == "category (3 levels, other 'rest')"
    assert not col.is_plain
    ints = ps.Column.category([30, 10, 20])
    assert ints.to_int(np.array([20, 30, 10])).tolist() == [2, 0, 1]
    assert ints.to_int(np.array(["20", "10"])).tolist() == [2, 1]          # CSV text
    assert ints.to_int(np.array([20.0])).tolist() == [2]
    big = np.array([20, 2**64 - 1, 10], dtype=np.uint64)       # beyond int64: outside, not wrapped
    assert ps.Column.category([30, 10, 20], other=-1).to_int(big).tolist() == [2, 3, 1]
    with pytest.raises(InputError, match="outside its 3 levels"):
        ints.to_int(big)


def test_record_round_trip_and_strict_load():
    col = ps.Column.category(["b", "a"], other="z", name="n")
    rec = col.to_record()
    assert rec == {"name": "n", "kind": "category", "levels": ["b", "a"], "other": "z"}
    assert ps.Column.from_record(rec) == col
    for bad in ({**rec, "levels": "ba"}, {**rec, "levels": ["a", "a"]}, {**rec, "levels": []},
                {**rec, "other": "a"}, {**rec, "extra": 1}, {**rec, "levels": [1.5]}):
        with pytest.raises(FormatError):
            ps.Column.from_record(bad)


@pytest.mark.parametrize("levels, other, error, text", [
    ([], None, ParameterError, "at least one level"),
    (["a", "b", "a"], None, ParameterError, "'a' is given twice"),
    (["a", 1], None, TypeError, "mix of str and int"),
    ([1.5, 2.5], None, TypeError, "a float"),
    ([True, False], None, TypeError, "a bool"),
    ("abc", None, TypeError, "ordered list"),
    ({"a", "b"}, None, TypeError, "ordered list"),
    (None, None, TypeError, "ordered list"),
    (["a", "NA"], None, ParameterError, "missing value"),
    (["a", " b"], None, ParameterError, "surrounding blanks"),
    (["a", "b"], "a", ParameterError, "already one of the levels"),
    (["a", "b"], 3, TypeError, "other must be a str"),
    ([1, 2], "x", TypeError, "other must be a int"),
    ([2**63], None, ParameterError, "int64"),
    ([f"level {i}" for i in range(MAX_LEVELS + 1)], None, ParameterError,
     "at most"),
    (["x" * 100_000 + str(i) for i in range(20)], None, ParameterError, "bytes of levels"),
])
def test_bad_levels(levels, other, error, text):
    with pytest.raises(error, match=text):
        ps.Column.category(levels, other=other)


def test_a_value_outside_the_levels_is_refused_without_echo():
    col = ps.Column.category(LEVELS, name="carrier")
    with pytest.raises(InputError) as exc:
        col.to_int(np.array(["AA", SECRET]))
    msg = str(exc.value)
    assert SECRET not in msg and "'carrier'" in msg and "4 levels" in msg and "other=" in msg
    assert "\n" not in msg
    with pytest.raises(InputError) as exc:
        ps.Column.category([1, 2], name="k").to_int(np.array([1, 987654321]))
    assert "987654321" not in str(exc.value)


def test_wrong_types_are_refused_without_echo():
    col = ps.Column.category(LEVELS, name="c")
    with pytest.raises(TypeError, match="not a str") as exc:
        col.to_int(np.array(["AA", 424242], dtype=object))
    assert "424242" not in str(exc.value)
    with pytest.raises(TypeError, match="numbers"):
        col.to_int(np.array([1, 2]))
    with pytest.raises(TypeError, match="not an integer"):
        ps.Column.category([1, 2]).to_int(np.array([1.5]))


def test_query_bounds_must_be_levels():
    col = ps.Column.category(LEVELS, other="other", name="c")
    assert col.to_int(np.array(["other", "AA"], dtype=object), "lo", "lo").tolist() == [4, 0]
    with pytest.raises(DomainError, match="'QQ' is not a level"):
        col.to_int("QQ", "lo", "lo")
    with pytest.raises(DomainError, match="must be one of its levels"):
        col.to_int(3, "hi", "hi")


# ------------------------------------------------------------ flat histogram
def test_flat_counts_are_exact_at_huge_epsilon():
    values = _data()
    h = ps.LevelHistogram.build(values, levels=LEVELS, epsilon=1e6, name="c")
    truth = _truth(values)
    levels, counts, bars = h.counts_by_level()
    assert levels == tuple(LEVELS) and counts.tolist() == truth.tolist()
    assert h.count_levels(["WN", "AA"]) == truth[0] + truth[3]
    assert h.count("DL", "WN") == truth[1:].sum()
    assert h.count_many(["AA", "UA"], ["AA", "WN"]).tolist() == [truth[0], truth[2:].sum()]
    assert (bars.bias == 0).all() and (bars.low <= counts).all()
    assert h.released.tolist() == truth.tolist()


def test_other_counts_values_outside_the_levels():
    values = np.array(["AA", "x", "y", "WN", "x"], dtype=object)
    h = ps.LevelHistogram.build(values, levels=LEVELS, other="other", epsilon=1e6)
    assert h.counts_by_level()[1].tolist() == [1, 0, 0, 1, 3]
    assert h.count_levels("other") == 3
    with pytest.raises(InputError):
        ps.LevelHistogram.build(values, levels=LEVELS, epsilon=1e6)


def test_noise_law_is_discrete_laplace_of_scale_one_over_epsilon():
    """Seed-free: released minus true counts of 20,000 levels against the exact pmf."""
    L, eps = 20000, Fraction(1, 2)
    levels = [f"l{i}" for i in range(L)]
    values = np.array(levels, dtype=object)[np.arange(L * 3) % L]
    h = ps.LevelHistogram.build(values, levels=levels, epsilon=eps)
    assert h.noise_scale == 2 and h.epsilon == eps
    noise = h.released - 3
    q = math.exp(-1 / 2)
    support = np.arange(-30, 31)
    probs = (1 - q) / (1 + q) * q ** np.abs(support)
    counts = [int(np.sum(noise == z)) for z in support] + [int(np.sum(np.abs(noise) > 30))]
    assert_gof(counts, probs)
    # the error bars' std is that law's
    _, std = h.count_many(["l0"], ["l99"], return_std=True)
    assert std[0] == pytest.approx(math.sqrt(100 * 2 * q / (1 - q) ** 2))


def test_seeded_release_is_reproducible_and_counts_weights():
    values = _data(500)
    a = ps.LevelHistogram.build(values, levels=LEVELS, epsilon=1, rng=ps.Rng(seed=5))
    b = ps.LevelHistogram.build(values, levels=LEVELS, epsilon=1, rng=ps.Rng(seed=5))
    assert a.released.tolist() == b.released.tolist()
    uniq, cnt = np.unique(values.astype(str), return_counts=True)
    c = ps.LevelHistogram.build(uniq, counts=cnt, levels=LEVELS, epsilon=1, rng=ps.Rng(seed=5))
    assert c.released.tolist() == a.released.tolist()


def test_pandas_inputs_and_missing_values():
    pd = pytest.importorskip("pandas")
    values = _data(300)
    truth = _truth(values)
    for series in (pd.Series(values), pd.Series(values, dtype="category"),
                   pd.Series(values, dtype="string")):
        h = ps.LevelHistogram.build(series, levels=LEVELS, epsilon=1e6)
        assert h.counts_by_level()[1].tolist() == truth.tolist()
    with_na = pd.Series(list(values) + [None, np.nan], dtype=object)
    with pytest.raises(InputError, match="NULL"):
        ps.LevelHistogram.build(with_na, levels=LEVELS, epsilon=1e6)
    h = ps.LevelHistogram.build(with_na, levels=LEVELS, epsilon=1e6, dropna=True)
    assert h.counts_by_level()[1].tolist() == truth.tolist()
    empty = ps.LevelHistogram.build([], levels=LEVELS, epsilon=1e6)
    assert empty.counts_by_level()[1].tolist() == [0, 0, 0, 0]


def test_bad_arguments_are_refused_before_budget_or_randomness():
    budget = ps.Budget(10)
    values = _data(50)
    for kwargs, error in (({"epsilon": 0}, ParameterError), ({"epsilon": -1}, ParameterError),
                          ({"epsilon": 1, "levels": []}, ParameterError),
                          ({"epsilon": 1, "dropna": 1}, TypeError),
                          ({"epsilon": 1, "levels": ["AA"]}, InputError),
                          ({"epsilon": 1e-17}, ParameterError)):
        args = {"levels": LEVELS, **kwargs}
        with pytest.raises(error):
            ps.LevelHistogram.build(values, budget=budget, **args)
    assert budget.spent == 0
    with pytest.raises(ParameterError, match="not beside it"):
        ps.LevelHistogram.build(values, levels=ps.Column.category(LEVELS), other="x", epsilon=1)
    with pytest.raises(ParameterError, match="category Column"):
        ps.LevelHistogram.build(values, levels=ps.Column.date(), epsilon=1)
    ps.LevelHistogram.build(values, levels=LEVELS, epsilon=1, budget=budget)
    assert budget.spent == 1


def test_bad_queries():
    h = ps.LevelHistogram.build(_data(50), levels=LEVELS, epsilon=1)
    with pytest.raises(DomainError, match="'XX' is not a level"):
        h.count("XX", "WN")
    with pytest.raises(DomainError, match="lo must come before hi"):
        h.count("WN", "AA")
    with pytest.raises(ParameterError, match="named twice"):
        h.count_levels(["AA", "AA"])
    with pytest.raises(ParameterError, match="at least one"):
        h.count_levels([])
    with pytest.raises(TypeError, match="must be a level"):
        h.count(1.5, "AA")
    with pytest.raises(ParameterError):
        h.error_bound(1.5)


def test_error_bars_cover_and_error_bound_is_simultaneous():
    h = ps.LevelHistogram.build(_data(100), levels=LEVELS, epsilon=1, rng=ps.Rng(seed=1))
    bars = h.confidence_intervals(["AA", "AA"], ["AA", "WN"], 0.95)
    assert (bars.noise > 2 * bars.std).all() and (bars.high > bars.low).all()
    assert h.error_bound(0.95) >= bars.noise.max()
    total, std = h.count_levels(["AA", "UA"], return_std=True)
    assert std == pytest.approx(float(bars.std[0]) * math.sqrt(2))


def test_save_load_identical_and_tampered(tmp_path):
    h = ps.LevelHistogram.build(_data(), levels=LEVELS, other="other", epsilon=0.5, name="c",
                                rng=ps.Rng(seed=3))
    path = tmp_path / "h.pds"
    h.save(path)
    g = ps.load(path)
    assert isinstance(g, ps.LevelHistogram) and g.column == h.column and g.epsilon == h.epsilon
    assert g.counts_by_level()[1].tolist() == h.counts_by_level()[1].tolist()
    kind, meta, arrays, _ = read_record(path)
    assert meta["column"]["levels"] == LEVELS            # public levels in the header
    for bad_meta, bad_arrays in (
            ({**meta, "column": {"name": None, "kind": "integer"}}, arrays),
            (meta, {"released": arrays["released"][:3]}),
            ({**meta, "epsilon": [0, 1]}, arrays),
            ({**meta, "format": 2}, arrays)):
        write_record(tmp_path / "bad.pds", kind, bad_meta, bad_arrays)
        with pytest.raises(FormatError):
            ps.load(tmp_path / "bad.pds")


def test_the_largest_level_lists_save_and_load(tmp_path):
    """Levels near the JSON limit still fit the file's header: what is written loads."""
    levels = [f"l{i:07d}" for i in range(100_000)]
    h = ps.LevelHistogram.build(np.array(["l0000007"]), levels=levels, epsilon=1e6)
    h.save(tmp_path / "big.pds")
    back = ps.load(tmp_path / "big.pds")
    assert back.column == h.column and back.count_levels("l0000007") == 1


# -------------------------------------------------------------- the rule, trees
def test_public_rule_picks_flat_or_tree():
    few = [f"l{i}" for i in range(FLAT_MAX_LEVELS)]
    many = few + ["one more"]
    assert isinstance(ps.category_synopsis(["l1"], levels=few, epsilon=1), ps.LevelHistogram)
    syn = ps.category_synopsis(["l1"], levels=many, epsilon=1)
    assert isinstance(syn, ps.IntervalSynopsis) and syn.domain == (0, FLAT_MAX_LEVELS)
    assert isinstance(ps.category_synopsis(["l1"], levels=many, epsilon=1, structure="flat"),
                      ps.LevelHistogram)
    with pytest.raises(ParameterError, match="structure"):
        ps.category_synopsis(["l1"], levels=few, epsilon=1, structure="best")
    with pytest.raises(ParameterError, match="fanout"):
        ps.category_synopsis(["l1"], levels=few, epsilon=1, fanout=4)


def test_tree_over_codes_answers_levels_and_sets(tmp_path):
    values = _data()
    truth = _truth(values)
    syn = ps.category_synopsis(values, levels=LEVELS, epsilon=1e6, structure="tree",
                               name="carrier", estimator="cover")
    assert syn.counts_by_level()[1].tolist() == truth.tolist()
    assert syn.count_levels(["AA", "UA", "WN"]) == truth[[0, 2, 3]].sum()
    assert syn.count("DL", "UA") == truth[1:3].sum()
    syn.save(tmp_path / "t.pds")
    back = ps.load(tmp_path / "t.pds")
    assert back.column == syn.column and back.levels == tuple(LEVELS)
    assert back.count_levels(["AA", "WN"]) == syn.count_levels(["AA", "WN"])
    plain = ps.IntervalSynopsis.build([1, 2], domain=(0, 3), epsilon=1)
    with pytest.raises(TypeError, match="category column"):
        plain.counts_by_level()


def test_category_axis_of_a_rectangle_synopsis(tmp_path):
    pd = pytest.importorskip("pandas")
    g = np.random.default_rng(2)
    values = _data(3000)
    day = pd.Timestamp("2001-01-01") + pd.to_timedelta(g.integers(0, 90, 3000), "D")
    frame = pd.DataFrame({"carrier": values, "day": day})
    cat = ps.Column.category(LEVELS, name="carrier")
    syn = ps.RectangleSynopsis.build(frame, domain=[("AA", "WN"), ("2001-01-01", "2001-03-31")],
                                     columns=[cat, ps.Column.date("day")], epsilon=1e6)
    true = int(np.sum((values == "UA") & (day < pd.Timestamp("2001-02-01"))))
    assert round(syn.count(["UA", "2001-01-01"], ["UA", "2001-01-31"])) == true
    true2 = int(np.sum(np.isin(values, ["DL", "UA"])))
    assert round(syn.count(["DL", "2001-01-01"], ["UA", "2001-03-31"])) == true2
    syn.save(tmp_path / "r.pds")
    back = ps.load(tmp_path / "r.pds")
    assert back.columns[0] == cat
    assert back.count(["UA", "2001-01-01"], ["UA", "2001-01-31"]) == \
        syn.count(["UA", "2001-01-01"], ["UA", "2001-01-31"])
    with pytest.raises(DomainError, match="not a level"):
        syn.count(["XX", "2001-01-01"], ["UA", "2001-01-31"])


def test_older_files_still_load():
    """Files of release 0.1 (no category column) load and answer as before."""
    import pathlib
    fixtures = pathlib.Path(__file__).parent / "fixtures"
    for name in ("interval_hierarchical", "rect_multitree"):
        syn = ps.load(fixtures / f"{name}.pds")
        assert not hasattr(syn, "column") or syn.column.kind == "integer"
        dom = syn.domain if isinstance(syn, ps.IntervalSynopsis) else syn.domain[0]
        assert np.isfinite(syn.count_many(*(([dom[0]], [dom[1]]) if isinstance(
            syn, ps.IntervalSynopsis) else ([[d[0] for d in syn.domain]],
                                            [[d[1] for d in syn.domain]])))).all()


# ------------------------------------------------------------------ sources
@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("cats")
    values = _data(1500, seed=7)
    values[::97] = "XX"                  # outside the levels: other
    return d, values


def _expected(values):
    return _truth(values).tolist() + [int(np.sum(values == "XX"))]


def _flat_of(source):
    return ps.LevelHistogram.build(source, levels=LEVELS, other="other", epsilon=1e6)


def _unit():
    return [ps.Column.category(LEVELS, other="other", name="carrier")]


def test_csv_and_parquet_sources(table):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    d, values = table
    csv = d / "t.csv"
    csv.write_text("carrier,n\n" + "".join(f"{v},1\n" for v in values))
    pq.write_table(pa.table({"carrier": values.astype(str)}), d / "t.parquet",
                   row_group_size=400)
    for path, engine in ((csv, "local"), (d / "t.parquet", "local"), (csv, "duckdb"),
                         (d / "t.parquet", "duckdb")):
        src = sources.files(str(path), ["carrier"], units=_unit(), engine=engine)
        assert _flat_of(src).counts_by_level()[1].tolist() == _expected(values), (path, engine)
    tree = ps.category_synopsis(sources.files(str(csv), ["carrier"], units=_unit()),
                                levels=_unit()[0], epsilon=1e6, structure="tree",
                                estimator="cover")
    assert tree.counts_by_level()[1].tolist() == _expected(values)


def test_sqlite_and_duckdb_sources(table):
    duckdb = pytest.importorskip("duckdb")
    d, values = table
    db = d / "t.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (carrier TEXT)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values.tolist()])
    con.commit()
    con.close()
    src = sources.SqlSource(f"sqlite:///{db}", ["carrier"], table="t", units=_unit())
    assert _flat_of(src).counts_by_level()[1].tolist() == _expected(values)
    ddb = d / "t.duckdb"
    con = duckdb.connect(str(ddb))
    con.execute("CREATE TABLE t (carrier VARCHAR)")
    con.execute("INSERT INTO t SELECT unnest(?)", [values.tolist()])
    con.close()
    src = sources.SqlSource(f"duckdb:///{ddb}", ["carrier"], table="t", units=_unit())
    assert _flat_of(src).counts_by_level()[1].tolist() == _expected(values)
    strict = sources.SqlSource(f"duckdb:///{ddb}", ["carrier"], table="t",
                               units=[ps.Column.category(LEVELS, name="carrier")])
    with pytest.raises(InputError, match="outside its 4 levels") as exc:
        ps.LevelHistogram.build(strict, levels=LEVELS, epsilon=1)
    assert "XX" not in str(exc.value)


def test_a_dask_collection_is_refused_in_one_line():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    series = dd.from_pandas(pd.Series(["AA", "WN"] * 5, name="c"), npartitions=2)
    budget = ps.Budget(1)
    for mechanism in ("flat", "tree"):
        with pytest.raises(ParameterError, match="dask collection"):
            ps.category_synopsis(series, levels=LEVELS, epsilon=1, structure=mechanism,
                                 budget=budget)
    assert budget.spent == 0


@pytest.mark.integration
def test_postgresql_source(table):
    from pg_cluster import Cluster, postgres_bin
    if postgres_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    psycopg = pytest.importorskip("psycopg")
    _, values = table
    with Cluster(port=54371) as pg:
        with psycopg.connect(pg.url, autocommit=True) as con:
            con.execute("CREATE TABLE t (carrier text)")
            with con.cursor().copy("COPY t (carrier) FROM STDIN") as copy:
                for v in values.tolist():
                    copy.write_row((v,))
        url = pg.reader("t")
        src = sources.SqlSource(url, ["carrier"], table="t", units=_unit())
        assert _flat_of(src).counts_by_level()[1].tolist() == _expected(values)
