"""The publishing service in process (Starlette's TestClient): the JSON API equals the
loaded synopses' own answers, every bad request is a 4xx with a one-line JSON error,
every response carries the security headers, the page has no inline script."""
import asyncio
import html.parser
import json
import random
import warnings
from decimal import Decimal

import numpy as np
import pytest

import pydp_synopsis as ps
from serve_support import save_examples

pytest.importorskip("starlette")
pytest.importorskip("httpx")
with warnings.catch_warnings():       # starlette 1.x: "use httpx2" (httpx is what we test with)
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from pydp_synopsis.errors import FormatError, UsageError  # noqa: E402
from pydp_synopsis.serve import Limits, create_app, load_catalog  # noqa: E402
from pydp_synopsis.serve.answers import Batcher  # noqa: E402
from pydp_synopsis.serve.limits import RequestError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    return save_examples(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def catalog(examples):
    return load_catalog([path for path, _ in examples.values()])


@pytest.fixture(scope="module")
def client(catalog):
    with TestClient(create_app(catalog, Limits(max_body=4096, max_batch=50))) as c:
        yield c


def assert_equal_bars(got, bars):
    for key, field in (("answers", "answer"), ("std", "std"), ("low", "low"), ("high", "high")):
        assert got[key] == getattr(bars, field).tolist(), key


# ---------------------------------------------------------------- the API
def test_listing_health_and_openapi(client):
    assert client.get("/healthz").json() == {"status": "ok", "synopses": 4}
    listing = client.get("/api/synopses").json()
    assert [(s["name"], s["kind"]) for s in listing] == [
        ("ages", "interval"), ("dates", "interval"), ("where", "rectangle"), ("counter", "counter")]
    spec = client.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    assert "/api/synopses/{name}/count" in spec["paths"]
    assert spec["components"]["schemas"]["CountRequest"]["properties"]["ranges"]["maxItems"] == 50


def test_description_in_user_units(client, examples):
    d = client.get("/api/synopses/dates").json()
    assert d["kind"] == "interval" and d["epsilon"] == 0.5 and d["epsilon_text"] == "1/2"
    assert d["delta"] == 0
    assert d["columns"][0]["kind"] == "date"
    assert d["domain"] == [["2001-01-01", "2001-12-31"]]
    assert d["structure"]["segments"] == len(examples["dates"][1])
    w = client.get("/api/synopses/where").json()
    assert [c["name"] for c in w["columns"]] == ["lat", "lon"]
    assert w["domain"] == [[40.0, 41.0], [-74.5, -73.5]]
    assert [c["domain_text"] for c in w["columns"]] == [["40.000", "41.000"], ["-74.500", "-73.500"]]
    assert w["columns"][0]["units"] == "decimal (scale 1e3)"
    assert w["structure"]["structure"] == examples["where"][1].structure


def test_counter_shows_its_release_only(client, examples):
    counter = examples["counter"][1]
    d = client.get("/api/synopses/counter").json()
    assert d["release"]["value"] == counter.release and d["time"] == counter.time == 300
    assert d["release"]["std"] == float(counter.std([300])[0])
    assert d["release"]["bound"] == float(counter.error_bound(confidence=0.95))
    # what is shown: public parameters and the release, nothing else of the checkpoint
    assert set(d) == {"name", "kind", "class", "epsilon", "epsilon_text", "delta", "horizon",
                      "time", "structure", "release"}
    assert set(d["release"]) == {"time", "value", "std", "confidence", "bound", "low", "high",
                                 "bound_is"}
    assert set(d["structure"]) == {"counter", "k", "subtraction"}
    r = client.post("/api/synopses/counter/count", json={"ranges": [[0, 1]]})
    assert r.status_code == 400 and "counter" in r.json()["error"]


def test_count_equals_the_synopsis(client, examples):
    syn = examples["ages"][1]
    lo = np.array([0, 10, 500, 99_999, 12_345])
    hi = np.array([99_999, 10, 70_000, 99_999, 54_321])
    r = client.post("/api/synopses/ages/count",
                    json={"ranges": [[int(a), int(b)] for a, b in zip(lo, hi)]})
    assert r.status_code == 200, r.text
    got = r.json()
    assert_equal_bars(got, syn.confidence_intervals(lo, hi))
    assert got["answers"] == syn.count_many(lo, hi).tolist()
    assert got["answers"][1] == syn.count(10, 10)
    r = client.post("/api/synopses/ages/count", json={"ranges": [[5, 9000]], "confidence": 0.5})
    assert_equal_bars(r.json(), syn.confidence_intervals([5], [9000], 0.5))


def test_count_in_dates_and_decimals(client, examples):
    dates = examples["dates"][1]
    r = client.post("/api/synopses/dates/count",
                    json={"ranges": [["2001-03-01", "2001-03-31"], ["2001-01-01", "2001-12-31"]]})
    assert r.status_code == 200, r.text
    assert_equal_bars(r.json(), dates.confidence_intervals(["2001-03-01", "2001-01-01"],
                                                           ["2001-03-31", "2001-12-31"]))
    where = examples["where"][1]
    # JSON numbers stand for their decimal text: 40.4 is the decimal 40.4, not a float
    body = '{"boxes": [[[40.4, 40.6], [-74.1, -73.9]], [["40", "41"], [-74.5, "-73.5"]]]}'
    r = client.post("/api/synopses/where/count", content=body,
                    headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    lo = np.array([["40.4", "-74.1"], ["40", "-74.5"]], dtype=object)
    hi = np.array([["40.6", "-73.9"], ["41", "-73.5"]], dtype=object)
    assert_equal_bars(r.json(), where.confidence_intervals(lo, hi))
    assert r.json()["answers"][0] == where.count(["40.4", "-74.1"], ["40.6", "-73.9"])


def test_distribution_is_the_released_bins(client, examples):
    syn = examples["ages"][1]
    pic = client.get("/api/synopses/ages/distribution?bins=30").json()
    assert len(pic["answers"]) == len(pic["lo"]) == 30
    bars = syn.confidence_intervals(np.array(pic["lo"], dtype=np.int64),
                                    np.array(pic["hi"], dtype=np.int64), nonnegative=True)
    assert_equal_bars(pic, bars)
    assert all(int(a) + 0 <= int(b) for a, b in zip(pic["lo"], pic["hi"]))
    assert all(int(pic["hi"][i]) + 1 == int(pic["lo"][i + 1]) for i in range(29))
    heat = client.get("/api/synopses/where/distribution?bins=5").json()
    assert len(heat["answers"]) == 5 and len(heat["answers"][0]) == 5
    where = examples["where"][1]
    box = where.count_many(np.array([[heat["x"]["lo"][2], heat["y"]["lo"][3]]], dtype=object),
                           np.array([[heat["x"]["hi"][2], heat["y"]["hi"][3]]], dtype=object),
                           nonnegative=True)
    assert heat["answers"][3][2] == float(box[0])
    dates = client.get("/api/synopses/dates/distribution?bins=12").json()
    assert dates["lo"][0] >= "2001-01-01" and dates["hi"][-1] <= "2001-12-31"


HAS_QUANTILES = all(hasattr(ps.IntervalSynopsis, f) for f in ("quantile", "cdf", "histogram"))


@pytest.mark.skipif(not HAS_QUANTILES,
                    reason="IntervalSynopsis has no quantile/cdf/histogram in this build")
def test_quantiles_where_the_synopsis_has_them(client, examples):
    ages, dates = examples["ages"][1], examples["dates"][1]
    r = client.post("/api/synopses/ages/quantile", json={"q": [0.1, 0.5, 0.9]})
    assert r.status_code == 200, r.text
    assert r.json()["quantiles"] == [int(v) for v in ages.quantile(np.array([0.1, 0.5, 0.9]))]
    r = client.post("/api/synopses/dates/quantile", json={"q": [0, 0.5, 1]})
    assert r.json()["quantiles"] == np.datetime_as_string(
        dates.quantile(np.array([0.0, 0.5, 1.0]))).tolist()
    assert r.json()["quantiles"][1].startswith("2001-")
    r = client.post("/api/synopses/ages/cdf", json={"x": [0, 50_000, 99_999]})
    assert r.json()["cdf"] == ages.cdf(np.array([0, 50_000, 99_999])).tolist()
    r = client.post("/api/synopses/dates/cdf", json={"x": ["2001-06-30"]})
    assert r.json()["cdf"] == [float(dates.cdf(np.array(["2001-06-30"], dtype=object))[0])]
    r = client.get("/api/synopses/ages/histogram?bins=7")
    counts, edges = ages.histogram(7)
    assert r.json() == {"counts": counts.tolist(), "edges": [int(e) for e in edges]}
    for path, body in (("quantile", {"q": [1.5]}), ("quantile", {"q": ["a"]}),
                       ("cdf", {"x": [100_000]}), ("cdf", {"x": []})):
        bad = client.post(f"/api/synopses/ages/{path}", json=body)
        assert bad.status_code == 400 and list(bad.json()) == ["error"], bad.text


def test_a_rectangle_serves_one_axis_and_needs_it(client, examples):
    where = examples["where"][1]
    r = client.post("/api/synopses/where/quantile", json={"q": [0.25, 0.5], "axis": 1})
    assert r.status_code == 200, r.text
    expect = where.quantile(np.array([0.25, 0.5]), axis=1)
    assert r.json()["quantiles"] == [float(v) for v in expect]
    r = client.post("/api/synopses/where/cdf", json={"x": ["40.5"], "axis": 0})
    assert r.json()["cdf"] == [float(where.cdf(np.array(["40.5"], dtype=object), axis=0)[0])]
    r = client.get("/api/synopses/where/histogram?bins=4&axis=0")
    counts, _ = where.histogram(4, axis=0)
    assert r.status_code == 200 and r.json()["counts"] == counts.tolist()
    for path, body in (("quantile", {"q": [0.5]}), ("quantile", {"q": [0.5], "axis": 2}),
                       ("quantile", {"q": [0.5], "axis": [0]}), ("cdf", {"x": [1], "axis": -1}),
                       ("quantile", {"q": [0.5], "axis": True})):
        bad = client.post(f"/api/synopses/where/{path}", json=body)
        assert bad.status_code == 400 and list(bad.json()) == ["error"], bad.text
        assert "axis" in bad.json()["error"]
    bad = client.get("/api/synopses/where/histogram?bins=4")
    assert bad.status_code == 400 and "axis" in bad.json()["error"]
    bad = client.post("/api/synopses/ages/quantile", json={"q": [0.5], "axis": 0})
    assert bad.status_code == 400 and "axis" in bad.json()["error"]


def test_quantile_of_a_counter_or_of_nothing_is_refused(client):
    r = client.post("/api/synopses/counter/quantile", json={"q": [0.5]})
    assert r.status_code == 400 and "counter" in r.json()["error"]
    r = client.post("/api/synopses/nosuch/quantile", json={"q": [0.5]})
    assert r.status_code == 404 and list(r.json()) == ["error"]


# ---------------------------------------------------------------- batching
def test_batched_answers_equal_single_answers(examples):
    syn = examples["ages"][1]
    batcher = Batcher(syn)
    queries = [(np.array([3 * i]), np.array([3 * i + 4000])) for i in range(20)]
    queries.append((np.arange(0, 500, 5), np.arange(0, 500, 5) + 777))
    bad = (np.array([10]), np.array([5]))          # lo > hi: its own error only

    async def all_at_once():
        futures = [batcher.submit(lo, hi, 0.95) for lo, hi in queries]
        futures.insert(7, batcher.submit(*bad, 0.95))
        return await asyncio.gather(*futures, return_exceptions=True)

    results = asyncio.run(all_at_once())
    failed = results.pop(7)
    assert isinstance(failed, RequestError) and failed.status == 400
    for (lo, hi), bars in zip(queries, results):
        alone = syn.confidence_intervals(lo, hi)
        for field in ("answer", "std", "low", "high"):
            assert getattr(bars, field).tolist() == getattr(alone, field).tolist()


# ---------------------------------------------------------------- bad requests
BAD = [
    # (path, body, status, fragment of the error)
    ("/api/synopses/ages/count", b"{", 400, "not valid JSON"),
    ("/api/synopses/ages/count", b"", 400, "no body"),
    ("/api/synopses/ages/count", b"\xff\xfe", 400, "not valid JSON"),
    ("/api/synopses/ages/count", b"[[1, 2]]", 400, "JSON object"),
    ("/api/synopses/ages/count", b'{"ranges": []}', 400, "non-empty"),
    ("/api/synopses/ages/count", b'{"ranges": 5}', 400, "non-empty list"),
    ("/api/synopses/ages/count", b'{"boxes": [[[0, 1]]]}', 400, "unknown field"),
    ("/api/synopses/ages/count", b'{"ranges": [[1]]}', 400, "[lo, hi]"),
    ("/api/synopses/ages/count", b'{"ranges": [[1, 2, 3]]}', 400, "[lo, hi]"),
    ("/api/synopses/ages/count", b'{"ranges": [[1, [2]]]}', 400, "is a list"),
    ("/api/synopses/ages/count", b'{"ranges": [[true, 2]]}', 400, "true/false"),
    ("/api/synopses/ages/count", b'{"ranges": [[null, 2]]}', 400, "null"),
    ("/api/synopses/ages/count", b'{"ranges": [[{}, 2]]}', 400, "an object"),
    ("/api/synopses/ages/count", b'{"ranges": [[NaN, 2]]}', 400, "not valid JSON"),
    ("/api/synopses/ages/count", b'{"ranges": [[1.5, 2]]}', 400, "lo"),
    ("/api/synopses/ages/count", b'{"ranges": [["a", 2]]}', 400, "lo"),
    ("/api/synopses/ages/count", b'{"ranges": [[5, 1]]}', 400, "lo must be <= hi"),
    ("/api/synopses/ages/count", b'{"ranges": [[0, 100000]]}', 400, "domain [0, 99999]"),
    ("/api/synopses/ages/count", b'{"ranges": [[-1, 5]]}', 400, "domain"),
    ("/api/synopses/ages/count", b'{"ranges": [[0, 99999999999999999999999]]}', 400, "domain"),
    ("/api/synopses/ages/count", b'{"ranges": [[0, 1]], "confidence": 1}', 400, "confidence"),
    ("/api/synopses/ages/count", b'{"ranges": [[0, 1]], "confidence": "x"}', 400, "confidence"),
    ("/api/synopses/ages/count", b'{"ranges": [[0, 1]], "confidence": 0}', 400, "confidence"),
    ("/api/synopses/ages/count", b"[" * 5000 + b"]" * 5000, 413, "limit"),
    ("/api/synopses/ages/count", b'{"ranges": [' + b"[0,1]," * 60 + b"[0,1]]}", 413, "limit is 50"),
    ("/api/synopses/dates/count", b'{"ranges": [["2001-02-30", "2001-03-01"]]}', 400, "date"),
    ("/api/synopses/dates/count", b'{"ranges": [[1, 2]]}', 400, "numbers given for a date column"),
    ("/api/synopses/dates/count", b'{"ranges": [["2000-12-31", "2001-03-01"]]}', 400, "domain"),
    ("/api/synopses/where/count", b'{"ranges": [[0, 1]]}', 400, "unknown field"),
    ("/api/synopses/where/count", b'{"boxes": [[[40, 41]]]}', 400, "2 [lo, hi] pairs"),
    ("/api/synopses/where/count", b'{"boxes": [[[40, 41], [-80, -73.5]]]}', 400, "domain"),
    ("/api/synopses/where/count", b'{"boxes": [[["x", 41], [-74, -73.5]]]}', 400, "decimal"),
    ("/api/synopses/where/count", b'{"boxes": [[[1e300, 41], [-74, -73.5]]]}', 400, "too large"),
    ("/api/synopses/where/count", b'{"boxes": [[[1e999999999999999999, 41], [-74, -73.5]]]}', 400,
     "exponent"),
    ("/api/synopses/nope/count", b'{"ranges": [[0, 1]]}', 404, "no synopsis"),
    ("/api/synopses/../etc/passwd/count", b'{"ranges": [[0, 1]]}', 404, "no such path"),
    ("/api/synopses/counter/count", b'{"ranges": [[0, 1]]}', 400, "counter"),
]


@pytest.mark.parametrize("path, body, status, fragment", BAD)
def test_bad_request_is_one_line_json(client, path, body, status, fragment):
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    error = r.json()
    assert list(error) == ["error"] and "\n" not in error["error"]
    assert fragment in error["error"], error
    assert "Traceback" not in r.text and len(r.text) < 400


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/api/synopses/ages/count", 405), ("PUT", "/api/synopses/ages/count", 405),
    ("DELETE", "/api/synopses/ages", 405), ("POST", "/healthz", 405), ("POST", "/s/ages", 405),
    ("GET", "/api/synopses/zzz", 404), ("GET", "/s/zzz", 404), ("GET", "/static/app.py", 404),
    ("GET", "/static/../app.py", 404), ("GET", "/nothing", 404),
    ("GET", "/api/synopses/ages/distribution?bins=0", 400),
    ("GET", "/api/synopses/ages/distribution?bins=1001", 400),
    ("GET", "/api/synopses/ages/distribution?bins=x", 400),
    ("GET", "/api/synopses/where/distribution?bins=101", 400),
    ("GET", "/api/synopses/ages/histogram", 200 if HAS_QUANTILES else 404),
    ("GET", "/api/synopses/ages/histogram?bins=0", 400 if HAS_QUANTILES else 404),
])
def test_wrong_method_or_path_is_json(client, method, path, status):
    r = client.request(method, path)
    assert r.status_code == status, r.text
    if status >= 400:
        assert list(r.json()) == ["error"]


def test_body_limit_before_reading(client):
    r = client.post("/api/synopses/ages/count", content=b"x" * 5000)
    assert r.status_code == 413 and "4096 bytes" in r.json()["error"]

    def chunks():                 # no Content-Length: refused at the chunk past the limit
        for _ in range(100):
            yield b"[" * 1000

    r = client.post("/api/synopses/ages/count", content=chunks())
    assert r.status_code == 413


def test_limits_are_checked():
    with pytest.raises(ValueError, match="max_batch"):
        Limits(max_batch=0)
    with pytest.raises(ValueError, match="max_body"):
        Limits(max_body=10)


# ---------------------------------------------------------------- headers and page
HEADERS = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
           "x-frame-options": "DENY"}


@pytest.mark.parametrize("method, path", [
    ("GET", "/"), ("GET", "/s/ages"), ("GET", "/static/synopsis.js"), ("GET", "/healthz"),
    ("GET", "/api/synopses/ages"), ("POST", "/api/synopses/ages/count"), ("GET", "/nothing"),
    ("GET", "/api/synopses/ages/count")])
def test_security_headers_everywhere(client, method, path):
    r = client.request(method, path, headers={"origin": "https://evil.example"})
    for key, value in HEADERS.items():
        assert r.headers[key] == value
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert "access-control-allow-origin" not in r.headers


def test_cors_only_for_the_origin_given(catalog):
    with TestClient(create_app(catalog, cors_origin="https://stats.example")) as c:
        ok = c.get("/api/synopses", headers={"origin": "https://stats.example"})
        assert ok.headers["access-control-allow-origin"] == "https://stats.example"
        other = c.get("/api/synopses", headers={"origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
        pre = c.options("/api/synopses/ages/count", headers={
            "origin": "https://stats.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type"})
        assert pre.status_code == 200


class _Scripts(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.inline, self.handlers = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts.append(attrs.get("src"))
        self.handlers += [k for k in attrs if k.startswith("on")]

    def handle_data(self, data):
        if self.lasttag == "script" and data.strip():
            self.inline.append(data)


@pytest.mark.parametrize("path", ["/", "/s/ages", "/s/where", "/s/counter"])
def test_pages_have_no_inline_script(client, path):
    r = client.get(path)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    parsed = _Scripts()
    parsed.feed(r.text)
    assert parsed.scripts in ([], ["/static/synopsis.js"])
    assert parsed.inline == [] and parsed.handlers == []


def test_page_names_are_escaped(tmp_path, examples):
    path = tmp_path / 'a"><script>x<'
    path.mkdir()
    target = path / "evil<b>.pds"
    ps.save(examples["ages"][1], target)
    cat = load_catalog([target])
    with TestClient(create_app(cat)) as c:
        listing = c.get("/").text
        assert "<b>" not in listing and "evil&lt;b&gt;" in listing
        page = c.get("/s/evil<b>").text
        assert "<b>" not in page and 'data-synopsis="evil&lt;b&gt;"' in page


# ---------------------------------------------------------------- loading
def test_only_saved_files_load(tmp_path, examples):
    bad = tmp_path / "notes.pds"
    bad.write_text("hello")
    with pytest.raises(FormatError):
        load_catalog([bad])
    with pytest.raises(UsageError, match="two files are named 'ages'"):
        other = tmp_path / "ages.pds"
        ps.save(examples["ages"][1], other)
        load_catalog([examples["ages"][0], other])
    with pytest.raises(UsageError):
        load_catalog([])


def test_decimal_numbers_are_exact(client, examples):
    where = examples["where"][1]
    body = {"boxes": [[[Decimal("40.1235"), 41], [-74.5, -73.5]]]}
    text = json.dumps(body, default=str).replace('"40.1235"', "40.1235")
    r = client.post("/api/synopses/where/count", content=text,
                    headers={"content-type": "application/json"})
    assert r.json()["answers"][0] == where.count(["40.1235", "-74.5"], ["41", "-73.5"])


@pytest.mark.fuzz
def test_fuzz_malformed_bodies_never_5xx(client):
    gen = random.Random(5)                       # the fuzz's own inputs, not a mechanism
    atoms = [b"[", b"]", b"{", b"}", b",", b":", b'"ranges"', b'"boxes"', b"0", b"-1", b"1e9",
             b"99999999999999999999", b"true", b"null", b'"2001-01-01"', b"1.5", b"\xff", b" "]
    for _ in range(2000):
        body = b"".join(gen.choice(atoms) for _ in range(gen.randint(0, 30)))
        path = gen.choice(["/api/synopses/ages/count", "/api/synopses/where/count",
                           "/api/synopses/dates/count"])
        r = client.post(path, content=body)
        assert 200 <= r.status_code < 500, (body, r.text)
        if r.status_code >= 400:
            assert list(r.json()) == ["error"]


def test_both_json_encoders_give_the_same_numbers(catalog, examples):
    body = {"ranges": [[0, 99_999], [17, 4242], [5, 5]]}
    got = []
    for fast in (True, False):
        with TestClient(create_app(catalog, fast_json=fast)) as c:
            got.append(c.post("/api/synopses/ages/count", json=body).json())
            got.append(c.get("/api/synopses/where").json())
    assert got[0] == got[2] and got[1] == got[3]
    syn = examples["ages"][1]
    assert got[2]["answers"] == syn.count_many([0, 17, 5], [99_999, 4242, 5]).tolist()


def test_every_counter_kind_is_described(tmp_path):
    sparse = ps.SparseStreamCounter(horizon=10_000, epsilon=1.0, rng=ps.Rng(seed=5))
    sparse.update_many(np.tile([0, 0, 1], 500))
    sqrt = ps.SqrtFactorizationCounter(horizon=100, epsilon=1.0, delta=1e-6, rng=ps.Rng(seed=6))
    sqrt.update_many([1] * 10)
    binary = ps.BinaryTreeCounter(horizon=64, epsilon=1.0, rng=ps.Rng(seed=7))
    paths = []
    for name, obj in (("sparse", sparse), ("sqrt", sqrt), ("fresh", binary)):
        paths.append(tmp_path / f"{name}.ckpt")
        ps.save(obj, paths[-1])
    with TestClient(create_app(load_catalog(paths))) as c:
        d = c.get("/api/synopses/sparse").json()
        assert d["release"]["value"] == sparse.release and d["time"] == 1500
        assert d["release"]["bound"] == float(sparse.error_bound(confidence=0.95))
        s = c.get("/api/synopses/sqrt").json()
        assert s["delta"] == 1e-6 and s["time"] == 10
        assert s["release"] == (None if not hasattr(sqrt, "release") else s["release"])
        f = c.get("/api/synopses/fresh").json()
        assert f["release"]["value"] == 0 and f["time"] == 0 and "std" not in f["release"]
        for name in ("sparse", "sqrt", "fresh"):
            assert c.get(f"/api/synopses/{name}/distribution").status_code == 200
            assert c.get(f"/s/{name}").status_code == 200
