"""Long-tier privacy audit: every registered mechanism, every neighbour pair, many trials.

The CI tier (tests/privacy/test_audit.py) audits each mechanism's tight pair
and a few others with ~10^4 releases per side; this script runs the same
two-phase audit (tests/privacy/audit.py: events chosen on one sample,
Clopper-Pearson lower bounds of the privacy loss on fresh samples, alpha =
1e-6 with Bonferroni over the events) on the whole pair catalogue, plus
random neighbours over tiny domains, with 10^5 to 10^7 releases per pair.
For the partitions it also prints the exact loss of the pair from the Fig. 1
oracle (tests/privacy/oracles.py).

Usage::

    PYTHONPATH=. python benchmarks/audit_privacy.py --tier medium            # ~1e5 per pair
    PYTHONPATH=. python benchmarks/audit_privacy.py --tier long --random 5   # 1e6 - 1e7
    PYTHONPATH=. python benchmarks/audit_privacy.py --mechanisms interval/kary --pairs tight

Prints a table (mechanism, pair, epsilon, lower bound of the privacy loss,
its ratio to epsilon, the exact loss where an oracle exists, releases per
side, seconds) and writes every result, with the events tested, as JSON
(default ``benchmarks/results/privacy_audit_<tier>.json``).  Exit status 1
if any lower bound exceeds epsilon.  Not a test: it asserts nothing about
time.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from privacy import MECHANISMS, TIERS, Tier, audit_pair  # noqa: E402
from privacy.mechanisms import random_tiny_pairs  # noqa: E402
from privacy.oracles import fig1_max_loss  # noqa: E402


def exact_loss(mech, pair):
    """The pair's exact privacy loss where an oracle exists (the partitions), else None."""
    params = {**mech.params, **pair.params}
    if mech.exact_law is None:
        return None
    if mech.name == "partition/offline":
        lo, hi = params["domain"]
        if hi - lo + 1 > 16:
            return None
        import numpy as np
        counts = [np.bincount(np.asarray(v, dtype=np.int64) - lo, minlength=hi - lo + 1).tolist()
                  for v in (pair.x, pair.x_prime)]
        probe = mech.run([], __import__("pydp_synopsis").Rng(seed=0), **params)
    else:
        if params["size"] > 16 or max(pair.x_prime) > 10**6:
            return None
        counts = [list(pair.x), list(pair.x_prime)]
        probe = mech.run([0] * params["size"], __import__("pydp_synopsis").Rng(seed=0), **params)
    return fig1_max_loss(counts[0], counts[1], probe.epsilon, probe.threshold)[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="medium", choices=sorted(TIERS))
    parser.add_argument("--n-select", type=int, help="override the tier's selection sample")
    parser.add_argument("--n-test", type=int, help="override the tier's test sample")
    parser.add_argument("--mechanisms", nargs="*", default=[],
                        help="names or prefixes (default: all registered)")
    parser.add_argument("--pairs", default="all", choices=["all", "ci", "tight"])
    parser.add_argument("--random", type=int, default=0,
                        help="random neighbour pairs over tiny domains per mechanism")
    parser.add_argument("--workers", type=int, default=1, help="processes sampling each pair")
    parser.add_argument("--seed", default="0")
    parser.add_argument("--json", help="output file (default benchmarks/results/...)")
    args = parser.parse_args(argv)

    base = TIERS[args.tier]
    tier = Tier(args.tier, args.n_select or base.n_select, args.n_test or base.n_test, base.events)
    out_path = Path(args.json or ROOT / "benchmarks" / "results" / f"privacy_audit_{args.tier}.json")
    out_path.parent.mkdir(parents=True, exist_ok=True)

    jobs = []
    for name, mech in MECHANISMS.items():
        if args.mechanisms and not any(name.startswith(m) for m in args.mechanisms):
            continue
        pairs = list(mech.pairs) if args.pairs == "all" else mech.tagged(args.pairs)
        pairs += random_tiny_pairs(name, args.random, seed=0) if args.random else []
        jobs += [(mech, p) for p in pairs]

    header = (f"{'mechanism':<22} {'pair':<48} {'epsilon':>8} {'CP lower bound':>14} "
              f"{'ratio':>6} {'exact':>7} {'n/side':>9} {'s':>6}")
    print(f"# privacy audit, tier {tier.name}: {tier.n_select} + {tier.n_test} releases per side "
          f"(times the mechanism's and pair's sample factors), alpha = 1e-6")
    print(header)
    print("-" * len(header))
    results, violated, t0 = [], 0, time.time()
    for mech, pair in jobs:
        r = audit_pair(mech, pair, tier, seed=args.seed, workers=args.workers)
        exact = exact_loss(mech, pair)
        violated += r.violated
        tag = "  VIOLATION" if r.violated else ("  tight" if "tight" in pair.tags else "")
        print(f"{mech.name:<22} {pair.name[:48]:<48} {float(r.epsilon):>8.4g} "
              f"{r.lower_bound:>14.4f} {r.ratio:>6.3f} "
              f"{'' if exact is None else f'{exact:.4f}':>7} {r.n_test:>9} {r.seconds:>6.1f}{tag}",
              flush=True)
        results.append({**r.to_json(), "exact_loss": exact, "tags": sorted(pair.tags)})
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                                capture_output=True).stdout.strip()
    except OSError:
        commit = None
    Path(out_path).write_text(json.dumps({
        "command": " ".join([os.path.basename(sys.argv[0])] + (argv or sys.argv[1:])),
        "tier": {"name": tier.name, "n_select": tier.n_select, "n_test": tier.n_test,
                 "events": tier.events},
        "commit": commit, "seconds": round(time.time() - t0, 1), "violations": violated,
        "results": results}, indent=1))
    print(f"\n{len(results)} pairs, {violated} violations, {time.time() - t0:.0f} s; "
          f"wrote {out_path}")
    return 1 if violated else 0


if __name__ == "__main__":
    sys.exit(main())
