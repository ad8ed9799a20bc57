"""Hardening targets, measured: crafted files, junk files, killed streams.

Three measurements (issue "Hardening"), each printed as a table:

1. Structured mutations of a record of every kind (the files in
   ``tests/fixtures/``): a meta field, an array entry or a payload byte is
   replaced, the unkeyed checksum recomputed, and the file loaded and used
   (answers and error bound, or one counter step) in a child process with
   a time limit.  Counts: loaded and answered, FormatError (or another
   clean ``SynopsisError`` of the use), any other exception, crash
   (signal), hang (time limit).  Target: 0 of the last three.
2. A 3 GB junk file (sparse, costs no disk): time to refusal and the
   process' peak RSS growth.  Target: under 10 ms and 50 MB.
3. ``count-stream --checkpoint`` killed with SIGKILL at random moments,
   then resumed, until the whole input is consumed: every position's
   release is printed, never two different values for one position (a
   batch reprinted after a kill carries the very same values).

Run::

    python benchmarks/bench_hardening.py [--mutations 100000] [--kills 100]

The mutation workers run in parallel (``--jobs``, default the number of
cores); 10^5 mutations take about 15 minutes on two cores.
"""
import argparse
import json
import multiprocessing as mp
import os
import pathlib
import random
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = sorted((HERE.parent / "tests" / "fixtures").glob("*.pds"))
sys.path.insert(0, str(HERE.parent / "tests"))

MAGIC = b"PDSYN\x00v1"
VALUES = [0, 1, -1, 2, 0.5, -0.5, 1e300, 2**31, 2**32, 2**53, 2**62, 2**63, 2**64, 2**64 + 1, -2**63,
          10**30, None, True, "", "kary", "binary", "hierarchical", "adaptive", "multitree",
          "uniform", "cover", "seal", [], [1], [0, 0], [256] * 8, [2**62, 4], {"a": 1}, "1/0",
          [1, 0], [0, 1], [-1, 1]]


def mutate(raw, rnd):
    import hashlib

    hlen = struct.unpack_from("<Q", raw, len(MAGIC))[0]
    head = json.loads(raw[len(MAGIC) + 8:len(MAGIC) + 8 + hlen])
    payload = bytearray(raw[len(MAGIC) + 8 + hlen:-32])
    where = rnd.choice(["meta", "meta", "array", "payload"])
    if where == "meta" and head["meta"]:
        key = rnd.choice(sorted(head["meta"]))
        head["meta"][key] = rnd.choice(VALUES)
    elif where == "array" and head["arrays"]:
        spec = rnd.choice(head["arrays"])
        spec[rnd.choice(["shape", "offset", "nbytes", "dtype"])] = rnd.choice(VALUES)
    elif payload:
        for _ in range(rnd.randint(1, 4)):
            payload[rnd.randrange(len(payload))] = rnd.randrange(256)
    body = MAGIC + struct.pack("<Q", len(json.dumps(head).encode())) + json.dumps(head).encode()
    body += bytes(payload)
    return body + hashlib.sha256(body).digest()


def use(path):
    """Load and use one file; returns an outcome word."""
    import numpy as np

    import pydp_synopsis as ps

    try:
        obj = ps.load(path)
    except ps.FormatError:
        return "format_error"
    try:
        if isinstance(obj, (ps.IntervalSynopsis, ps.RectangleSynopsis)):
            if isinstance(obj, ps.IntervalSynopsis):
                lo, hi = obj.domain
                obj.count_many(np.array([lo], dtype=object).astype(np.int64 if lo < 0 else np.uint64),
                               np.array([hi], dtype=object).astype(np.int64 if lo < 0 else np.uint64))
            else:
                lo = np.array([[a for a, _ in obj.domain]], dtype=np.int64)
                hi = np.array([[b for _, b in obj.domain]], dtype=np.int64)
                obj.count_many(lo, hi)
            obj.error_bound(0.9)
        else:
            obj.update(1)
    except ps.SynopsisError:
        return "clean_refusal"
    return "loaded"


def worker(args):
    """One batch of mutations in a fresh child (a crash takes the child only)."""
    seed, count, timeout = args
    rnd = random.Random(seed)
    raws = [p.read_bytes() for p in FIXTURES]
    tally = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(count):
            k = rnd.randrange(len(raws))
            path = os.path.join(tmp, f"m{i}.pds")
            with open(path, "wb") as fh:
                fh.write(mutate(raws[k], rnd))
            signal.alarm(timeout)
            try:
                outcome = use(path)
            except Exception as exc:  # noqa: BLE001 - counted as a defect
                outcome = f"other:{type(exc).__name__}"
                print(f"defect in {FIXTURES[k].stem}: {type(exc).__name__}: {exc}", file=sys.stderr)
            finally:
                signal.alarm(0)
            os.unlink(path)
            tally[(FIXTURES[k].stem, outcome)] = tally.get((FIXTURES[k].stem, outcome), 0) + 1
    return tally


def _alarm(signum, frame):
    raise TimeoutError("hang")


def init_child():
    signal.signal(signal.SIGALRM, _alarm)


def bench_mutations(total, jobs, timeout=10):
    batch = 500
    tasks = [(seed, min(batch, total - seed * batch), timeout) for seed in range((total + batch - 1) // batch)]
    tally = {}
    crashes = 0
    t0 = time.perf_counter()
    ctx = mp.get_context("fork")
    with ctx.Pool(jobs, initializer=init_child, maxtasksperchild=1) as pool:
        results = [pool.apply_async(worker, (t,)) for t in tasks]
        for r in results:
            try:
                part = r.get(timeout=timeout * batch)
            except Exception:  # noqa: BLE001 - a child that died (crash) loses its batch
                crashes += 1
                continue
            for key, n in part.items():
                tally[key] = tally.get(key, 0) + n
    elapsed = time.perf_counter() - t0
    kinds = sorted({k for k, _ in tally})
    outcomes = ["loaded", "format_error", "clean_refusal"]
    others = sorted({o for _, o in tally if o not in outcomes})
    print(f"\n1. {total:,} structured mutations of {len(kinds)} record kinds in {elapsed:.0f} s "
          f"({jobs} processes); child crashes (batches lost): {crashes}")
    cols = outcomes + (others or ["other"])
    print(f"{'kind':<24}" + "".join(f"{c:>16}" for c in cols))
    for k in kinds:
        print(f"{k:<24}" + "".join(f"{tally.get((k, c), 0):>16,}" for c in cols))
    bad = sum(n for (_, o), n in tally.items() if o not in outcomes)
    print(f"defects (other exceptions + hangs): {bad}; crashes: {crashes}")


def bench_junk():
    import pydp_synopsis as ps

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "junk.bin")
        with open(path, "wb") as fh:
            fh.truncate(3 * 10**9)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            try:
                ps.load(path)
            except ps.FormatError:
                pass
            times.append(time.perf_counter() - t0)
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(f"\n2. 3 GB junk file: refused in {min(times) * 1e3:.3f} ms (median "
          f"{sorted(times)[10] * 1e3:.3f} ms), peak RSS growth {grown:.1f} MB "
          f"(targets: 10 ms, 50 MB)")


def bench_kills(kills, n_items=4_000_000, seed=7):
    import numpy as np

    rnd = random.Random(seed)
    exe = [sys.executable, "-m", "pydp_synopsis.cli"]
    stream = np.random.default_rng(seed).integers(0, 2, n_items)
    with tempfile.TemporaryDirectory() as tmp:
        ck = os.path.join(tmp, "c.pds")
        consumed, values, runs, reprinted = 0, {}, 0, 0
        conflicts = 0
        killed = 0
        mid = 0
        while consumed < n_items:
            args = exe + ["count-stream", "--checkpoint", ck]
            if not os.path.exists(ck):
                args += ["--horizon", str(n_items), "--epsilon", "1"]
            proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            import threading

            data = "".join(f"{int(b)}\n" for b in stream[consumed:]).encode()
            got = {"out": [], "err": []}

            def drain(fh, into):
                for chunk in iter(lambda: fh.read1(65536), b""):
                    into.append(chunk)

            def feed(p=proc, data=data):
                try:
                    for i in range(0, len(data), 4096):
                        p.stdin.write(data[i:i + 4096])
                        p.stdin.flush()
                        time.sleep(0.03)           # a live stream: kills land mid-stream
                    p.stdin.close()
                except (BrokenPipeError, ValueError, OSError):
                    pass

            threads = [threading.Thread(target=drain, args=(proc.stdout, got["out"]), daemon=True),
                       threading.Thread(target=drain, args=(proc.stderr, got["err"]), daemon=True),
                       threading.Thread(target=feed, daemon=True)]
            for th in threads:
                th.start()
            if killed < kills:
                time.sleep(rnd.uniform(0.3, 0.6))
                proc.kill()
                killed += 1
            proc.wait()
            for th in threads[:2]:
                th.join()
            out, err = b"".join(got["out"]), b"".join(got["err"])
            runs += 1
            err = err.decode()
            if "Traceback" in err:
                print(err)
                raise SystemExit("a run failed with a traceback")
            # where this run's output starts: the saved position, minus a reprinted batch
            import pydp_synopsis as ps

            start = consumed
            lines = out.decode().split("\n")[:-1]     # a line cut by the kill is dropped
            if "printing again the" in err:
                n_again = int(err.split("printing again the ")[1].split(" ")[0].replace(",", ""))
                start -= n_again
                reprinted += 1
            for i, v in enumerate(lines):
                pos = start + i
                if pos in values and values[pos] != v:
                    conflicts += 1
                values.setdefault(pos, v)
            now = ps.load(ck).time if os.path.exists(ck) else 0
            mid += 0 < now - consumed < n_items - consumed
            consumed = now
    missing = sum(1 for p in range(n_items) if p not in values)
    print(f"\n3. count-stream over {n_items:,} items, killed with SIGKILL {killed} times at random "
          f"moments, {runs} runs in all: positions released with two different values: {conflicts}; "
          f"positions never printed: {missing}; runs stopped mid-stream: {mid}; runs that reprinted "
          f"their last batch: {reprinted}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutations", type=int, default=100_000)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", choices=["junk", "kills", "mutations"])
    args = ap.parse_args()
    if args.only in (None, "junk"):
        bench_junk()
    if args.only in (None, "kills"):
        bench_kills(args.kills)
    if args.only in (None, "mutations"):
        bench_mutations(args.mutations, args.jobs)


if __name__ == "__main__":
    main()
