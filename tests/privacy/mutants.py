"""The mutant build of the C core, and the detectors run against it.

Design (why a C switch): the mutants -- noise for 1.5 epsilon, a halved
node scale, noise calibrated to one less than the sensitivity -- live in
``csrc/mutation.c`` and exist only in a build compiled with
``PDS_TEST_MUTANTS=1``.  :func:`build_mutant_package` makes that build with
the project's own ``setup.py`` into a scratch directory (``build/`` is
ignored by git; the in-place and installed extensions are never touched)
next to a copy of the Python sources, and :func:`run_detectors` runs this
module as a child process against it.  A release build has no mutant code
path and refuses ``pds_test_mutation`` (PDS_EINVAL), so no Python call --
not even monkeypatching, which a Python-level switch would allow -- can
weaken a release.

Two detectors run on the mechanism's tight pair: the ordinary two-phase
audit (:func:`privacy.audit_pair`) at the ``mutant`` tier's sample sizes
scaled by the mutant's strength -- *detected* when the lower bound of the
privacy loss exceeds the epsilon the object reports -- and, for mechanisms
with an exact law (the partitions: Fig. 1 computed exactly, whose loss the
exact tests bound by epsilon), a chi-square test of the releases against
that law at alpha = 1e-6.  The second catches the partition's "every item
counted twice": Fig. 1 absorbs it on every event of probability above a few
percent (the exact oracle: at most 1.09 epsilon there), but not in its law.
With no mutant selected the same build must pass both (:data:`BASELINES`).

Run as ``python -m privacy.mutants --json OUT [NAME ...]`` from the scratch
package directory (``run_detectors`` does this).
"""
import argparse
import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["MUTANT_TIER", "STRENGTH", "LAW_RUNS", "BASELINES", "build_mutant_package",
           "run_detectors", "start_background", "background_results"]

ROOT = Path(__file__).resolve().parents[2]
#: Per side: selection, test releases (times the mechanism's ``samples`` and the strength).
MUTANT_TIER = (200, 1200)
#: How many samples a mutant needs, relative to MUTANT_TIER (1.5 epsilon is the subtlest;
#: mechanisms where the sensitivity mutant is as subtle -- S = 2 -- say so in
#: ``Mechanism.mutant_samples``).
STRENGTH = {"epsilon_1_5": 1.0, "half_node_scale": 0.4, "sensitivity_off_by_one": 0.4,
            "none": 0.4}
#: Releases for the exact-law detector (chi-square at ALPHA against the exact law).
LAW_RUNS = 3000
#: Mechanisms whose mutant build is also audited with no mutant selected (cheap ones:
#: the switch restores the correct law in the same process).
BASELINES = ("discrete_laplace", "partition/offline", "partition/online", "counter/binary")


def _c_digest():
    h = hashlib.sha256()
    for p in sorted([ROOT / "build.py", ROOT / "setup.py", *(ROOT / "csrc").glob("*")]):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_mutant_package(scratch):
    """A package directory whose ``pydp_synopsis`` has the mutant C core.

    The compiled extension is cached under ``build/privacy-mutants/<digest of
    the C sources>`` (rebuilt when they change, ~6 s); the Python sources are
    copied into ``scratch`` every time.  Returns the directory to put first
    on ``sys.path``.
    """
    cache = ROOT / "build" / "privacy-mutants" / _c_digest()
    lib = cache / "lib" / "pydp_synopsis"
    if not any(lib.glob("_native*.so")):
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        env = dict(os.environ, PDS_TEST_MUTANTS="1")
        proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib",
                               str(tmp / "lib"), "--build-temp", str(tmp / "temp")],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"mutant build failed:\n{proc.stdout}\n{proc.stderr}")
        shutil.rmtree(cache, ignore_errors=True)
        os.replace(tmp, cache)
    pkg = Path(scratch) / "pkg"
    shutil.rmtree(pkg, ignore_errors=True)
    shutil.copytree(ROOT / "pydp_synopsis", pkg / "pydp_synopsis",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "_native.c"))
    for so in lib.glob("_native*.so"):
        shutil.copy2(so, pkg / "pydp_synopsis" / so.name)
    return pkg


def run_detectors(pkg, names=(), timeout=1200):
    """Run every detector in a child process on the mutant package; returns its JSON."""
    out = Path(pkg) / "detections.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pkg), str(ROOT / "tests")]))
    proc = subprocess.run([sys.executable, "-m", "privacy.mutants", "--json", str(out), *names],
                          cwd=pkg, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        raise RuntimeError(f"detectors failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(out.read_text())


_background = {}


def start_background():
    """Build the mutant package and run every detector in a background thread.

    tests/conftest.py calls this right after collection when mutant tests
    are selected, so the child process (one core) overlaps the rest of the
    suite; :func:`background_results` joins it.
    """
    if "thread" in _background:
        return
    scratch = tempfile.mkdtemp(prefix="pds-mutants-")
    atexit.register(shutil.rmtree, scratch, True)

    def work():
        try:
            _background["results"] = run_detectors(build_mutant_package(scratch))
        except BaseException as exc:          # re-raised by background_results
            _background["error"] = exc

    thread = threading.Thread(target=work, name="pds-mutant-detectors", daemon=True)
    _background["thread"] = thread
    thread.start()


def background_results():
    """The detectors' results (starts them if :func:`start_background` was not called)."""
    start_background()
    _background["thread"].join()
    if "error" in _background:
        raise _background["error"]
    return _background["results"]


def _detect(names):
    import pydp_synopsis
    from pydp_synopsis._core import lib

    import pydp_synopsis as ps
    from privacy import ALPHA, MECHANISMS, MUTANTS, Tier, audit_pair
    from privacy.registry import law_pvalue

    here = Path.cwd().resolve()
    if Path(pydp_synopsis.__file__).resolve().parents[1] != here:
        raise RuntimeError(f"imported {pydp_synopsis.__file__}, not the mutant package in {here}")
    if lib.pds_test_mutation(0) != lib.PDS_OK:
        raise RuntimeError("this pydp_synopsis has no test mutants (not a PDS_TEST_MUTANTS build)")
    results = []
    for name, mech in MECHANISMS.items():
        if names and name not in names:
            continue
        pair = mech.mutant_pair()
        params = {**mech.params, **pair.params}
        for mutant in (("none",) if name in BASELINES else ()) + tuple(mech.mutants):
            code = 0 if mutant == "none" else MUTANTS[mutant]
            if lib.pds_test_mutation(code) != lib.PDS_OK:
                raise RuntimeError(f"cannot select mutant {mutant}")
            try:
                k = mech.mutant_samples.get(mutant, STRENGTH[mutant])
                tier = Tier(f"mutant:{mutant}", max(100, int(MUTANT_TIER[0] * k)),
                            max(300, int(MUTANT_TIER[1] * k)))
                r = audit_pair(mech, pair, tier, seed=f"mutant|{mutant}")
                pvalue = None
                if mech.exact_law is not None:
                    pvalue = law_pvalue(mech, pair.x_prime, LAW_RUNS,
                                        ps.Rng(seed=f"law|{name}|{mutant}".encode()), params)
            finally:
                lib.pds_test_mutation(0)
            by = ("audit" if r.violated else
                  "exact law" if pvalue is not None and pvalue < ALPHA else None)
            results.append({"mechanism": name, "pair": pair.name, "mutant": mutant,
                            "epsilon": float(r.epsilon), "lower_bound": r.lower_bound,
                            "law_pvalue": pvalue, "detected": by is not None, "by": by,
                            "seconds": r.seconds, "n_test": r.n_test})
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    results = _detect(set(args.names))
    Path(args.json).write_text(json.dumps(results, indent=1))
    for r in results:
        print(f"{r['mechanism']:22s} {r['mutant']:24s} eps={r['epsilon']:.3f} "
              f"lb={r['lower_bound']:.3f} p={r['law_pvalue']} {r['by'] or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
