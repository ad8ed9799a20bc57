"""What the serve tests share: saved synopses of each kind (plain integers, dates,
decimals, a counter checkpoint) and a real ``pydp-synopsis serve`` process on a
loopback ephemeral port."""
import contextlib
import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import pydp_synopsis as ps

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))


def save_examples(directory):
    """``{name: (path, object)}``: an interval synopsis of integers, one of dates, a 2-D
    rectangle synopsis of decimals and a k-ary counter checkpoint (seeded: tests only)."""
    gen = np.random.default_rng(7)      # test data only; the mechanisms use Rng(seed=...)
    out = {}
    ages = ps.IntervalSynopsis.build(gen.integers(0, 100_000, 20_000), domain=(0, 99_999),
                                     epsilon=1.0, rng=ps.Rng(seed=1))
    days = np.datetime64("2001-01-01") + gen.integers(0, 365, 5_000).astype("timedelta64[D]")
    dates = ps.IntervalSynopsis.build(days, domain=("2001-01-01", "2001-12-31"), epsilon=0.5,
                                      rng=ps.Rng(seed=2))
    lat = np.round(gen.normal(40.5, 0.15, 4_000).clip(40, 41), 3).astype(str)
    lon = np.round(gen.normal(-74.0, 0.2, 4_000).clip(-74.5, -73.5), 3).astype(str)
    where = ps.RectangleSynopsis.build(
        pd.DataFrame({"lat": lat, "lon": lon}), domain=[("40", "41"), ("-74.5", "-73.5")],
        scale="1e3", epsilon=1.0, rng=ps.Rng(seed=3))
    counter = ps.KaryTreeCounter(horizon=1000, epsilon=1.0, rng=ps.Rng(seed=4))
    counter.update_many(gen.integers(0, 2, 300))
    for name, obj in (("ages", ages), ("dates", dates), ("where", where), ("counter", counter)):
        path = os.path.join(directory, f"{name}.pds")
        ps.save(obj, path)
        out[name] = (path, ps.load(path))
    return out


def command(*args):
    """The command line as a user runs it, on the package these tests import."""
    script = os.path.join(os.path.dirname(sys.executable), "pydp-synopsis")
    cmd = [script] if os.path.exists(script) else [sys.executable, "-m", "pydp_synopsis.cli"]
    return cmd + [str(a) for a in args]


def _env():
    return dict(os.environ, PYTHONPATH=PACKAGE_PARENT)


@contextlib.contextmanager
def served(*args, timeout=60):
    """``pydp-synopsis serve ARGS --port 0`` in a child; yields ``(base_url, process)``.

    Reads the listening address from the line the server prints when ready;
    stops it with SIGTERM on exit and checks it stopped cleanly (status 0).
    """
    proc = subprocess.Popen(command("serve", *args, "--port", "0"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(),
                            cwd=os.path.dirname(PACKAGE_PARENT))
    try:
        base = _wait_ready(proc, timeout)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # the context's body may have checked the exit itself (then stderr is read already)


def _wait_ready(proc, timeout):
    deadline = time.monotonic() + timeout
    seen = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.2)
        if ready:
            line = proc.stderr.readline()
            seen += line
            if b"serving" in line:
                address = line.decode().split(" at ", 1)[1].split()[0]
                return address.rstrip("/")
            if not line and proc.poll() is not None:
                break
    raise AssertionError(f"the server did not start: {seen.decode(errors='replace')}")
