"""Load and fuzz of ``pydp-synopsis serve`` on loopback (issue #36).

Run from the repository root after building in place::

    PYTHONPATH=. python benchmarks/bench_serve.py                 # 64 clients, 30 s, 10,000 fuzz
    PYTHONPATH=. python benchmarks/bench_serve.py --seconds 5 --fuzz 1000

The server is the command a user runs (``pydp-synopsis serve SYN --port 0``)
in its own process; the clients are ``--procs`` other processes, each
running ``--clients / --procs`` concurrent asyncio loops (one keep-alive
HTTP/1.1 connection each, :class:`RawConnection`; httpx is used for the fuzz)
for ``--seconds`` after a 2-second warm-up.
Each request is a single-range count, or with probability
``--batch-share`` a count of ``--batch`` ranges (uniform random intervals
of the synopsis's domain, new ones every request).  Everything runs on
loopback only, and the load is bounded: a fixed number of clients, each
waiting for its answer before it asks again.

Printed:

* per kind (single, batch): requests/s, p50, p99 and max latency in ms,
  errors (any status but 200, or a transport error);
* the floors measured in the same run: ``GET /healthz`` under the same
  load (the framework with no synopsis work), and the in-process time of
  ``confidence_intervals`` for one range and for ``--batch`` ranges;
* the server's resident memory (``VmRSS``) sampled every 0.5 s over the
  measured run: first, min, max, last; flat when max and min are within
  10% of the first sample;
* the fuzz: ``--fuzz`` malformed requests (broken JSON, wrong types and
  shapes, bounds outside the domain, oversized batches and bodies, wrong
  methods and paths, random bytes) sent 16 at a time: the statuses seen,
  the count of 5xx (must be 0) and whether ``/healthz`` still answers.

Targets (issue #36): >= 2,000 single-range requests/s with p99 <= 50 ms,
a 1,000-range batch <= 20 ms p50, zero errors, RSS flat, zero 5xx.
A benchmark asserts nothing about time; the ``bench`` test runs it tiny.
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import pydp_synopsis as ps

DOMAIN = (0, 2**32 - 1)


def build_synopsis(path, n):
    """An interval synopsis of ``n`` values over a 2^32 domain (seeded: a benchmark)."""
    gen = np.random.default_rng(1)
    values = (gen.lognormal(20, 1.0, n) % DOMAIN[1]).astype(np.int64)
    syn = ps.IntervalSynopsis.build(values, domain=DOMAIN, epsilon=1.0, rng=ps.Rng(seed=2))
    syn.save(path)
    return syn


def start_server(path, max_batch):
    cmd = [sys.executable, "-m", "pydp_synopsis.cli", "serve", path, "--port", "0",
           "--max-batch", str(max_batch)]
    # the package this process imported, run from the synopsis's directory: from a
    # checkout's root, python -m would import the checkout, which has no built core
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__))))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            cwd=os.path.dirname(os.path.abspath(path)))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.2)
        if ready:
            line = proc.stderr.readline().decode()
            if " at http" in line:
                return proc, line.split(" at ", 1)[1].split()[0].rstrip("/")
            if not line:
                break
    proc.kill()
    raise SystemExit(f"the server did not start: {proc.stderr.read().decode()[-500:]}")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class RssSampler(threading.Thread):
    def __init__(self, pid, every=0.5):
        super().__init__(daemon=True)
        self.pid, self.every, self.samples = pid, every, []
        self.running = threading.Event()
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(self.every):
            if self.running.is_set():
                self.samples.append(rss_kib(self.pid))


# ------------------------------------------------------------------ clients
def _random_ranges(gen, q):
    a = gen.integers(DOMAIN[0], DOMAIN[1], (q, 2), dtype=np.int64, endpoint=True)
    a.sort(axis=1)
    return a.tolist()


class RawConnection:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams (the load generator).

    httpx spends ~4 ms of client CPU per request on this machine (238 req/s from
    one process): it would measure itself, not the server.  This client writes
    the request bytes and reads the status line, the headers and
    ``Content-Length`` bytes of body; the fuzz and the tests use httpx.
    """

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def request(self, method, path, body=b""):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self.writer.write(head.encode() + body)
        headers = await self.reader.readuntil(b"\r\n\r\n")
        status = int(headers[9:12])
        length = 0
        for line in headers.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        payload = await self.reader.readexactly(length)
        return status, payload

    def close(self):
        if self.writer is not None:
            self.writer.close()


async def _client_loop(conn, gen, url, health, deadline, measure_from, batch, share, out):
    while True:
        if time.perf_counter() >= deadline:
            conn.close()
            return
        if health:
            kind, method, path, body = "health", "GET", "/healthz", b""
        elif gen.random() < share:
            kind, method, path = "batch", "POST", url
            body = json.dumps({"ranges": _random_ranges(gen, batch)}).encode()
        else:
            kind, method, path = "single", "POST", url
            body = json.dumps({"ranges": _random_ranges(gen, 1)}).encode()
        start = time.perf_counter()
        try:
            status, _ = await conn.request(method, path, body)
            ok = status == 200
        except (OSError, asyncio.IncompleteReadError, ValueError):
            ok = False
            conn.close()
            conn.writer = None
        end = time.perf_counter()
        if start >= measure_from:
            out[kind][0].append(end - start)
            out[kind][1] += 0 if ok else 1


async def _clients(base, name, clients, seconds, warmup, batch, share, health, seed):
    host, port = base.split("//")[1].rsplit(":", 1)
    gen_root = np.random.default_rng(seed)
    out = {k: [[], 0] for k in ("single", "batch", "health")}
    start = time.perf_counter()
    measure_from = start + warmup
    deadline = measure_from + seconds
    url = f"/api/synopses/{name}/count"
    await asyncio.gather(*(
        _client_loop(RawConnection(host, int(port)), np.random.default_rng(gen_root.integers(2**63)),
                     url, health, deadline, measure_from, batch, share, out)
        for _ in range(clients)))
    return {k: (v[0], v[1]) for k, v in out.items()}


def client_process(args):
    """One client process: its share of the concurrent clients; returns latencies."""
    try:
        import uvloop                 # the clients' loop as fast as the server's, when installed
    except ImportError:
        return asyncio.run(_clients(*args))
    return uvloop.run(_clients(*args))


def run_load(base, name, *, clients, procs, seconds, warmup, batch, share, health=False):
    per = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    jobs = [(base, name, c, seconds, warmup, batch, share, health, 100 + i)
            for i, c in enumerate(per) if c]
    ctx = multiprocessing.get_context("spawn")
    # a spawned child takes this process's sys.path: the package this process imported
    # first, so that a checkout put on sys.path by another script (no built core) is not
    # what the child imports
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))
    sys.path.insert(0, package_parent)
    try:
        with ctx.Pool(len(jobs)) as pool:
            pending = pool.map_async(client_process, jobs)
            try:             # bounded: a child that cannot start must not hang the run
                parts = pending.get(timeout=seconds + warmup + 120)
            except multiprocessing.TimeoutError:
                raise SystemExit("the load clients did not finish (a client process could "
                                 "not start?)") from None
    finally:
        sys.path.remove(package_parent)
    merged = {}
    for kind in ("single", "batch", "health"):
        lat = [x for p in parts for x in p[kind][0]]
        merged[kind] = (np.array(lat), sum(p[kind][1] for p in parts))
    return merged


# ------------------------------------------------------------------ fuzz
def malformed_requests(gen, name, count, max_batch):
    """``count`` malformed requests ``(method, path, body, headers)``, varied."""
    url = f"/api/synopses/{name}/count"
    hi = DOMAIN[1]
    makers = [
        lambda: ("POST", url, b'{"ranges": [[1, 2]', {}),
        lambda: ("POST", url, b"", {}),
        lambda: ("POST", url, bytes(gen.integers(0, 256, int(gen.integers(1, 200))).tolist()), {}),
        lambda: ("POST", url, json.dumps({"ranges": [[int(gen.integers(0, 9)), "x"]]}).encode(), {}),
        lambda: ("POST", url, json.dumps({"ranges": [[hi, hi + 1 + int(gen.integers(9))]]}).encode(), {}),
        lambda: ("POST", url, json.dumps({"ranges": [[5, 1]]}).encode(), {}),
        lambda: ("POST", url, json.dumps({"ranges": [[0, 1]] * (max_batch + 1)}).encode(), {}),
        lambda: ("POST", url, json.dumps({"boxes": [[[0, 1]]]}).encode(), {}),
        lambda: ("POST", url, json.dumps({"ranges": [[True, None]]}).encode(), {}),
        lambda: ("POST", url, json.dumps({"ranges": [[0, 1]], "confidence": 2}).encode(), {}),
        lambda: ("POST", url, b"[" * 20_000, {}),
        lambda: ("POST", url, b'{"ranges": [[1e999999999999999999, 2]]}', {}),
        lambda: ("POST", url, b'{"ranges": {"lo": 0, "hi": 1}}', {}),
        lambda: ("POST", url, b"x" * ((1 << 20) + 1), {}),     # one byte over the default limit
        lambda: ("GET", url, b"", {}),
        lambda: ("DELETE", f"/api/synopses/{name}", b"", {}),
        lambda: ("POST", "/api/synopses/nope/count", b'{"ranges": [[0, 1]]}', {}),
        lambda: ("GET", "/static/../../etc/passwd", b"", {}),
        lambda: ("GET", f"/api/synopses/{name}/distribution?bins=-1", b"", {}),
        lambda: ("POST", url, json.dumps({"ranges": [[0, 1]], "extra": [1]}).encode(), {}),
    ]
    for i in range(count):
        yield makers[i % len(makers)]()


async def _fuzz(base, name, count, max_batch, concurrency=16):
    import httpx

    gen = np.random.default_rng(7)
    statuses, transport = {}, 0
    queue = list(malformed_requests(gen, name, count, max_batch))

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        async def worker(items):
            nonlocal transport
            for method, path, body, headers in items:
                try:
                    r = await client.request(method, path, content=body or None, headers=headers)
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                except httpx.HTTPError:
                    transport += 1
        await asyncio.gather(*(worker(queue[i::concurrency]) for i in range(concurrency)))
        alive = (await client.get("/healthz")).status_code == 200
    return statuses, transport, alive


# ------------------------------------------------------------------ report
def _ms(lat, p):
    return float(np.percentile(lat, p)) * 1e3 if len(lat) else float("nan")


def _row(kind, lat, errors, seconds):
    return (f"{kind:<22} {len(lat) / seconds:>10,.0f} {_ms(lat, 50):>8.2f} {_ms(lat, 99):>8.2f} "
            f"{(lat.max() * 1e3 if len(lat) else float('nan')):>8.1f} {errors:>7}")


def in_process_floor(syn, batch, reps=200):
    gen = np.random.default_rng(3)
    one = np.array(_random_ranges(gen, 1), dtype=np.int64)
    many = np.array(_random_ranges(gen, batch), dtype=np.int64)
    out = []
    for arr, n in ((one, reps), (many, max(5, reps // 20))):
        t = time.perf_counter()
        for _ in range(n):
            syn.confidence_intervals(arr[:, 0], arr[:, 1])
        out.append((time.perf_counter() - t) / n * 1e3)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=30.0, help="measured seconds (default 30)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring (default 2)")
    p.add_argument("--clients", type=int, default=64, help="concurrent clients (default 64)")
    p.add_argument("--procs", type=int, default=2, help="client processes (default 2)")
    p.add_argument("--batch", type=int, default=1000, help="ranges per batch query (default 1000)")
    p.add_argument("--batch-share", dest="share", type=float, default=0.01,
                   help="share of the requests that are batches (default 0.01)")
    p.add_argument("--fuzz", type=int, default=10_000, help="malformed requests (default 10000)")
    p.add_argument("--values", type=int, default=1_000_000, help="values in the synopsis")
    p.add_argument("--health-seconds", dest="health_seconds", type=float, default=None,
                   help="seconds of the /healthz floor (default: a third of --seconds)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "incomes.pds")
        syn = build_synopsis(path, args.values)
        proc, base = start_server(path, max(1000, args.batch))
        try:
            return _measure(args, syn, proc, base)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def _measure(args, syn, proc, base):
    print(f"pydp-synopsis serve, one process, {os.cpu_count()} cores (shared: other work may "
          f"run), {len(syn):,} segments, domain 2^32; {args.clients} clients in {args.procs} "
          f"processes, {args.seconds:g} s after {args.warmup:g} s warm-up, "
          f"{100 * args.share:g}% batches of {args.batch:,}")
    sampler = RssSampler(proc.pid)
    sampler.start()
    sampler.running.set()
    load = run_load(base, "incomes", clients=args.clients, procs=args.procs,
                    seconds=args.seconds, warmup=args.warmup, batch=args.batch, share=args.share)
    sampler.running.clear()
    health_s = args.health_seconds if args.health_seconds is not None else max(1.0, args.seconds / 3)
    health = run_load(base, "incomes", clients=args.clients, procs=args.procs, seconds=health_s,
                      warmup=min(args.warmup, 1.0), batch=args.batch, share=0.0, health=True)
    sampler.stop.set()
    print()
    print(f"{'requests':<22} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}")
    print(_row("single range", *load["single"], args.seconds))
    print(_row(f"batch of {args.batch:,}", *load["batch"], args.seconds))
    print(_row("floor: GET /healthz", *health["health"], health_s))
    one, many = in_process_floor(syn, args.batch)
    print(f"floor: in process, confidence_intervals: one range {one:.3f} ms, "
          f"{args.batch:,} ranges {many:.3f} ms")
    rss = np.array(sampler.samples, dtype=np.float64) / 1024
    if len(rss):
        flat = rss.max() <= 1.1 * rss[0] and rss.min() >= 0.9 * rss[0]
        print(f"server RSS (MiB) over the run, {len(rss)} samples: first {rss[0]:.1f}, min "
              f"{rss.min():.1f}, max {rss.max():.1f}, last {rss[-1]:.1f}: "
              f"{'flat (within 10%)' if flat else 'NOT flat'}")
    statuses, transport, alive = asyncio.run(_fuzz(base, "incomes", args.fuzz, max(1000, args.batch)))
    fives = sum(v for k, v in statuses.items() if k >= 500)
    shown = ", ".join(f"{k}: {v:,}" for k, v in sorted(statuses.items()))
    print(f"fuzz: {args.fuzz:,} malformed requests -> {shown}; transport errors {transport}; "
          f"5xx {fives}; server alive: {'yes' if alive and proc.poll() is None else 'NO'}")
    return {"load": load, "health": health, "rss": rss, "statuses": statuses, "alive": alive,
            "transport": transport}


if __name__ == "__main__":
    main()
