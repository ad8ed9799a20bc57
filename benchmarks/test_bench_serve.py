"""Short tier of benchmarks/bench_serve.py: the load, the floors, the RSS samples and the
fuzz run end to end at a tiny size (a real server on loopback; nothing about time is
asserted, only that every request was answered and no malformed one got a 5xx)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

import bench_serve  # noqa: E402


def test_bench_serve_tiny(capsys):
    out = bench_serve.main(["--seconds", "1", "--warmup", "0.5", "--clients", "8", "--procs", "1",
                            "--batch", "100", "--batch-share", "0.2", "--fuzz", "200",
                            "--values", "20000", "--health-seconds", "0.5"])
    text = capsys.readouterr().out
    for row in ("single range", "batch of 100", "floor: GET /healthz", "floor: in process",
                "server RSS", "fuzz: 200 malformed requests"):
        assert row in text, text
    single, errors = out["load"]["single"]
    assert len(single) > 0 and errors == 0
    assert out["load"]["batch"][1] == 0 and out["health"]["health"][1] == 0
    assert sum(out["statuses"].values()) + out["transport"] == 200
    assert all(400 <= s < 500 for s in out["statuses"]), out["statuses"]
    assert out["transport"] == 0 and out["alive"]
    assert len(out["rss"]) >= 1


def test_malformed_requests_are_varied():
    reqs = list(bench_serve.malformed_requests(np.random.default_rng(0), "x", 40, 10))
    assert len(reqs) == 40
    assert len({(m, p, b[:30]) for m, p, b, _ in reqs}) >= 18
    assert {m for m, *_ in reqs} == {"GET", "POST", "DELETE"}
