"""``pydp-synopsis serve`` as a user runs it: a real uvicorn server on a loopback
ephemeral port, queried over HTTP; limits enforced on the wire; a clean stop on
SIGINT and SIGTERM; a file that fails to load is one line and exit status 2."""
import json
import signal
import socket
import subprocess
import time

import numpy as np
import pytest

from serve_support import command, save_examples, served

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    return save_examples(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(examples):
    paths = [path for path, _ in examples.values()]
    with served(*paths, "--max-batch", "2000", "--max-body", "200000") as (base, proc):
        yield base


def test_api_over_http_equals_the_synopsis(server, examples):
    syn = examples["ages"][1]
    gen = np.random.default_rng(3)
    corners = np.sort(gen.integers(0, 100_000, (1000, 2)), axis=1)
    with httpx.Client(base_url=server, timeout=30) as c:
        assert c.get("/healthz").json()["status"] == "ok"
        assert [s["name"] for s in c.get("/api/synopses").json()] == [
            "ages", "dates", "where", "counter"]
        r = c.post("/api/synopses/ages/count", json={"ranges": corners.tolist()})
        assert r.status_code == 200, r.text
        bars = syn.confidence_intervals(corners[:, 0], corners[:, 1])
        got = r.json()
        assert got["answers"] == syn.count_many(corners[:, 0], corners[:, 1]).tolist()
        for key, field in (("std", "std"), ("low", "low"), ("high", "high")):
            assert got[key] == getattr(bars, field).tolist()
        r = c.post("/api/synopses/dates/count", json={"ranges": [["2001-06-01", "2001-06-30"]]})
        assert r.json()["answers"] == [examples["dates"][1].count("2001-06-01", "2001-06-30")]
        page = c.get("/s/ages")
        assert page.status_code == 200 and "synopsis.js" in page.text
        assert page.headers["x-frame-options"] == "DENY"
        assert "server" not in page.headers


def _raw(base, request, read=True):
    host, port = base.split("//")[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(request)
        if not read:
            return b""
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def test_limits_on_the_wire(server):
    # a huge declared length is refused before any of the body is sent
    head = (b"POST /api/synopses/ages/count HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            b"\r\nContent-Length: 999999999\r\nConnection: close\r\n\r\n")
    reply = _raw(server, head)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"].startswith("request body over")
    with httpx.Client(base_url=server, timeout=30) as c:
        r = c.post("/api/synopses/ages/count", json={"ranges": [[0, 1]] * 2001})
        assert r.status_code == 413 and "limit is 2000" in r.json()["error"]
        assert c.get("/healthz").status_code == 200          # still serving


def test_sigint_and_sigterm_stop_gracefully(examples):
    for sig in (signal.SIGINT, signal.SIGTERM):
        with served(examples["ages"][0]) as (base, proc):
            with httpx.Client(base_url=base, timeout=30) as c:
                assert c.get("/healthz").status_code == 200
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
            assert "Traceback" not in err.decode() and b"stopped" in err


@pytest.mark.parametrize("args, fragment", [
    (["{bad}"], "not a pydp_synopsis file"),
    (["{missing}"], "No such file"),
    (["{ages}", "{ages}"], "two files are named 'ages'"),
    (["{ages}", "--port", "70000"], "--port"),
    (["{ages}", "--max-batch", "0"], "--max-batch"),
    (["{ages}", "--cors-origin", "*"], "--cors-origin"),
    (["{ages}", "--host", "256.1.1.1"], "--host"),
])
def test_bad_start_is_one_line(tmp_path, examples, args, fragment):
    bad = tmp_path / "bad.pds"
    bad.write_bytes(b"not a synopsis at all")
    names = {"bad": bad, "missing": tmp_path / "none.pds", "ages": examples["ages"][0]}
    argv = [a.format(**names) for a in args]
    proc = subprocess.run(command("serve", *argv), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert fragment in lines[0], lines[0]


def test_port_in_use_is_one_line(examples):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        proc = subprocess.run(command("serve", examples["ages"][0], "--port", port),
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "cannot listen" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_fuzz_on_the_wire_never_5xx(server):
    gen = np.random.default_rng(11)          # the fuzz's inputs only
    bodies = [b"{", b'{"ranges": [[1, "x"]]}', b'{"boxes": 1}', b"\x00" * 50, b'{"ranges":[[0,1e5]]}',
              b'{"ranges": [[0, 1]], "confidence": -1}', b"[" * 3000]
    start = time.monotonic()
    with httpx.Client(base_url=server, timeout=30) as c:
        for i in range(300):
            body = bodies[i % len(bodies)] if i % 2 else bytes(gen.integers(0, 256, 40).tolist())
            path = ["/api/synopses/ages/count", "/api/synopses/where/count",
                    "/api/synopses/counter/count", "/api/synopses/x/count"][i % 4]
            r = c.post(path, content=body)
            assert 400 <= r.status_code < 500, r.text
            assert list(r.json()) == ["error"]
        assert c.get("/healthz").status_code == 200
    assert time.monotonic() - start < 120
