"""``pydp-synopsis demo``: private synopses of the bundled ZIP-code centroids,
example queries against the truth, and the bundled data written as CSV."""
import importlib.resources
import io
import math
import time

import numpy as np

from .. import persist
from ..budget import Budget
from ..intervals import IntervalSynopsis
from ..params import exact_epsilon
from ..plot import new_figure, require_matplotlib
from ..rectangles import RectangleSynopsis
from ..rng import Rng
from .common import check_output_option, rng_of, shown_text

__all__ = ["DEMO_LAT", "DEMO_LON", "DEMO_INTERVALS", "DEMO_RECTANGLES", "cmd_demo"]

DEMO_LAT = (-90_000_000, 90_000_000)
DEMO_LON = (-180_000_000, 180_000_000)


def _demo_data():
    ref = importlib.resources.files("pydp_synopsis") / "data" / "zipcodes.npz"
    with ref.open("rb") as fh:
        data = np.load(io.BytesIO(fh.read()))
        return data["latitude_e6"], data["longitude_e6"]


DEMO_INTERVALS = [
    ("south of 25°N (Hawaii, Keys, P. Rico)", -90.0, 25.0),
    ("between 30°N and 35°N", 30.0, 35.0),
    ("between 40°N and 41°N", 40.0, 41.0),
    ("north of 55°N (Alaska)", 55.0, 90.0),
]
DEMO_RECTANGLES = [
    ("New York City area", (40.49, -74.26), (40.92, -73.70)),
    ("Los Angeles area", (33.70, -118.67), (34.34, -117.65)),
    ("State of Colorado (box)", (36.99, -109.06), (41.00, -102.04)),
    ("Florida peninsula (box)", (24.50, -82.90), (30.80, -79.90)),
]


def _write_demo_data(path):
    """The bundled ZIP-code centroids as a CSV file ``lat,lon`` (decimal degrees)."""
    check_output_option(path, option="--write-data")
    lat, lon = _demo_data()

    def degrees(v):
        sign = np.where(v < 0, "-", "")
        a = np.abs(v)
        return np.char.add(np.char.add(np.char.add(sign, (a // 1_000_000).astype(str)), "."),
                           np.char.zfill((a % 1_000_000).astype(str), 6))

    text = "lat,lon\n" + "".join(f"{a},{b}\n" for a, b in zip(degrees(lat), degrees(lon)))
    persist.atomic_write(path, lambda fh: fh.write(text.encode()))
    print(f"wrote {path}: {len(lat):,} US ZIP code centroids (GeoNames, CC-BY-4.0), "
          f"columns lat,lon in degrees")
    return 0


def cmd_demo(args):
    if args.write_data:
        return _write_demo_data(args.write_data)
    if args.plot:
        require_matplotlib("--plot")
        check_output_option(args.plot, option="--plot")
    lat, lon = _demo_data()
    rng = rng_of(args)
    eps = args.epsilon
    budget = Budget(2 * exact_epsilon(eps))
    start = time.perf_counter()
    syn1 = IntervalSynopsis.build(lat, domain=DEMO_LAT, epsilon=eps, rng=rng, budget=budget)
    syn2 = RectangleSynopsis.build(np.column_stack([lat, lon]), domain=[DEMO_LAT, DEMO_LON],
                                   epsilon=eps, rng=rng, budget=budget)
    built = time.perf_counter() - start
    e6 = 1_000_000
    print(f"pydp-synopsis demo: {len(lat):,} US ZIP code centroids (GeoNames, CC-BY-4.0)")
    print(f"two releases at epsilon = {eps} each: total privacy loss {budget.spent} "
          f"(sequential composition); built in {built:.2f} s")
    print(f"  interval synopsis on latitude: {len(syn1):,} segments; "
          f"rectangle synopsis on latitude x longitude: {syn2.num_nodes:,} nodes\n")
    b1, b2 = syn1.error_bound(0.95), syn2.error_bound(0.95)
    header = (f"{'query':<48} {'true':>6} {'private':>9} {'± std':>7}  "
              f"{'95% interval (this query)':>25}")
    print(header)
    print("-" * len(header))

    def row(name, true, bars):
        a, s, low, high = (float(np.ravel(x)[0]) for x in (bars.answer, bars.std, bars.low, bars.high))
        interval = f"[{shown_text(low)}, {shown_text(high)}]"
        print(f"{name:<48} {true:>6,} {shown_text(a):>9} {shown_text(s):>7}  {interval:>25}")

    for name, a, b in DEMO_INTERVALS:
        lo, hi = max(int(a * e6), DEMO_LAT[0]), min(int(b * e6), DEMO_LAT[1])
        true = int(np.count_nonzero((lat >= lo) & (lat <= hi)))
        row("latitude " + name, true, syn1.confidence_intervals(lo, hi, 0.95, nonnegative=True))
    for name, (la0, lo0), (la1, lo1) in DEMO_RECTANGLES:
        lo = [int(la0 * e6), int(lo0 * e6)]
        hi = [int(la1 * e6), int(lo1 * e6)]
        true = int(np.count_nonzero((lat >= lo[0]) & (lat <= hi[0]) & (lon >= lo[1]) & (lon <= hi[1])))
        row(name, true, syn2.confidence_intervals([lo], [hi], 0.95, nonnegative=True))
    print(f"simultaneous 95% bounds (every query at once): intervals ± {shown_text(b1)}, "
          f"rectangles ± {shown_text(b2)}")
    # 1000 random queries with endpoints drawn from the data's bounding region
    # (public knowledge: the continental US plus territories), for a summary.
    q = args.queries
    gen = Rng(seed=12345)  # the query workload only (fixed so runs compare), not noise
    la = np.sort(gen.integers(-15 * e6, 72 * e6, size=(q, 2)), axis=1)
    lo_ = np.sort(gen.integers(-180 * e6, -60 * e6, size=(q, 2)), axis=1)
    bars1 = syn1.confidence_intervals(la[:, 0], la[:, 1], 0.95)
    ans1 = bars1.answer
    s_lat = np.sort(lat)
    true1 = np.searchsorted(s_lat, la[:, 1], side="right") - np.searchsorted(s_lat, la[:, 0], side="left")
    lo2 = np.column_stack([la[:, 0], lo_[:, 0]])
    hi2 = np.column_stack([la[:, 1], lo_[:, 1]])
    bars2 = syn2.confidence_intervals(lo2, hi2, 0.95)
    ans2 = bars2.answer
    true2 = np.array([np.count_nonzero((lat >= a) & (lat <= b) & (lon >= c) & (lon <= d))
                      for a, c, b, d in zip(lo2[:, 0], lo2[:, 1], hi2[:, 0], hi2[:, 1])])
    print(f"\n{q} random queries:{'':<10} {'RMSE':>6} {'median |err|':>13} {'median std':>11} "
          f"{'max |err|':>10} {'in 95% interval':>16} {'in sim. bound':>14}")
    for label, bars, true, bound in (("intervals (latitude)", bars1, true1, b1),
                                     ("rectangles (lat x lon)", bars2, true2, b2)):
        err = bars.answer - true
        inside = np.mean((bars.low <= true) & (true <= bars.high))
        print(f"  {label:<26} {math.sqrt(np.mean(err ** 2)):>6.1f} {np.median(np.abs(err)):>13.1f} "
              f"{np.median(bars.std):>11.1f} {np.abs(err).max():>10.1f} {inside:>16.1%} "
              f"{np.mean(np.abs(err) <= bound):>14.1%}")
    if args.plot:
        _plot(args.plot, true1, ans1, true2, ans2)
        print(f"\nwrote {args.plot}")
    return 0


def _plot(path, true1, ans1, true2, ans2):
    fig = new_figure((10, 4.5))
    axes = fig.subplots(1, 2)
    for ax, t, a, title in ((axes[0], true1, ans1, "intervals (latitude)"),
                            (axes[1], true2, ans2, "rectangles (lat × lon)")):
        ax.scatter(t, a, s=4, alpha=0.5)
        top = max(t.max(initial=1), a.max(initial=1))
        ax.plot([0, top], [0, top], color="gray", lw=1)
        ax.set_xlabel("true count")
        ax.set_ylabel("private answer")
        ax.set_title(title)
    fig.tight_layout()
    persist.atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
