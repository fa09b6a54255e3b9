"""Benchmark: jaxclust ITML vs metric-learn, and constrained complete link vs scipy's plain complete linkage.

Both sides run in the same process on the same inputs; the script prints times and ratios (no assertions).

    python benchmarks/bench_icc.py                         # ITML 2000x50 with 200 / 5000 pairs; CCL at n = 2000, 5000
    python benchmarks/bench_icc.py --itml-only --itml-pairs 200 --rounds 30   # the millisecond ITML case only
    python benchmarks/bench_icc.py --quick                 # small shapes, a smoke run

Times are medians of interleaved rounds (ours, peer, ours, peer, ...); ratios are medians of the per-round
ratios.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from jaxclust.icc.agglomerative import constrained_complete_link, euclidean_distances, propagate_must_links
from jaxclust.icc.itml import ITML, default_bounds


def _patch_metric_learn():
    """metric-learn 0.7.0 passes ``force_all_finite``, which scikit-learn 1.9 renamed
    ``ensure_all_finite``."""
    import metric_learn._util as mu

    if getattr(mu, "_jaxclust_patched", False):
        return

    def rename(fn):
        def wrapped(*a, **k):
            if "force_all_finite" in k:
                k["ensure_all_finite"] = k.pop("force_all_finite")
            return fn(*a, **k)

        return wrapped

    # metric-learn's ITML calls a scikit-learn helper deprecated in 1.8: one FutureWarning per fit
    warnings.filterwarnings("ignore", message="Function stable_cumsum is deprecated", category=FutureWarning)
    mu.check_array = rename(mu.check_array)
    mu.check_X_y = rename(mu.check_X_y)
    mu._jaxclust_patched = True


def _timed(fn, repeat=1):
    """(result, best wall time over ``repeat`` runs): the minimum is the least contended figure."""
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best


def _interleaved(fns, rounds):
    """Median wall time of each callable, timed in interleaved rounds (A, B, A, B, ...) so that a load
    change on a shared machine hits every side alike; also the per-round times."""
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in times.items()}, times


def bench_itml(n, d, m, max_iter, seed=0, rounds=15):
    _patch_metric_learn()
    from metric_learn import ITML as RefITML

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    lab = rng.integers(0, 5, n)
    P = rng.integers(0, n, size=(m, 2))
    P = P[P[:, 0] != P[:, 1]]
    y = np.where(lab[P[:, 0]] == lab[P[:, 1]], 1, -1)
    bounds = np.array(default_bounds(X, np.eye(d)))
    ours = ITML(bounds=tuple(bounds), max_iter=max_iter)
    _, t_first = _timed(lambda: ours.fit(X, P, y))  # includes compilation
    ref = RefITML(prior="identity", max_iter=max_iter)
    med, per = _interleaved(
        {"ours": lambda: ours.fit(X, P, y), "ref": lambda: ref.fit(X[P], y, bounds=bounds.copy())},
        rounds=rounds if m <= 1000 else 1,
    )
    A, A_ref = ours.get_mahalanobis_matrix(), ref.get_mahalanobis_matrix()
    return {
        "n": n,
        "d": d,
        "pairs": int(len(P)),
        "max_iter": max_iter,
        "ours_s": med["ours"],
        "ours_first_call_s": t_first,
        "metric_learn_s": med["ref"],
        "speedup": float(np.median(np.array(per["ref"]) / np.array(per["ours"]))),
        "sweeps_ours": ours.n_iter_,
        "sweeps_metric_learn": int(ref.n_iter_) + 1,
        "max_rel_diff_A": float(np.abs(A - A_ref).max() / np.abs(A_ref).max()),
    }


def _ccl_problem(kind, n, d, rng, n_ml=50, n_cl=500, n_labelled=100, n_classes=10):
    """(X, must-link groups, cannot-link pairs).

    "random": ``n_ml`` random must-link pairs, each its own group (the adversarial case: G = n_ml groups
    spread over the data), and ``n_cl`` random cannot-links. "labelled": what ICC produces, a 10-class
    mixture of which ``n_labelled`` random points are labelled; must-links join equal labels (one group per
    class, hundreds of pairs), cannot-links join every pair of opposing labels. "cl-only": cannot-links only.
    """
    if kind == "labelled":
        centres = rng.normal(scale=1.5, size=(n_classes, d))
        truth = rng.integers(0, n_classes, n)
        X = centres[truth] + rng.normal(size=(n, d))
        q = rng.choice(n, n_labelled, replace=False)
        groups = [q[truth[q] == c] for c in range(n_classes)]
        i, j = np.triu_indices(n_labelled, k=1)
        opp = truth[q[i]] != truth[q[j]]
        return X, groups, np.stack([q[i][opp], q[j][opp]], axis=1)
    X = rng.normal(size=(n, d))
    ml = rng.choice(n, size=(n_ml if kind == "random" else 0, 2), replace=False)
    cl = rng.integers(0, n, size=(n_cl, 2))
    cl = cl[(cl[:, 0] != cl[:, 1]) & ~np.isin(cl, ml).any(axis=1)]
    return X, [np.asarray(p) for p in ml], cl


def bench_ccl(kind, n, d=20, k=10, seed=0, rounds=None):
    rng = np.random.default_rng(seed)
    X, groups, cl = _ccl_problem(kind, n, d, rng)
    D = euclidean_distances(X)
    _, t_first = _timed(lambda: constrained_complete_link(D, k, groups, cl))

    def plain():
        Z = linkage(squareform(D, checks=False), method="complete")
        return fcluster(Z, k, criterion="maxclust")

    fns = {
        "ours": lambda: constrained_complete_link(D, k, groups, cl),
        "scipy": plain,
        "ml_step": lambda: propagate_must_links(D, groups),
    }
    if groups:
        fns["ours_contracted"] = lambda: constrained_complete_link(D, k, groups, cl, contract=True)
    rounds = rounds or (5 if n <= 2000 else 3)
    med, per = _interleaved(fns, rounds)
    labels, _, _, violated = constrained_complete_link(D, k, groups, cl)
    labels_c, _, _, violated_c = constrained_complete_link(D, k, groups, cl, contract=True)
    assert np.array_equal(labels, labels_c) and np.array_equal(violated, violated_c)  # same answer
    ratio = lambda key: float(np.median(np.array(per[key]) / np.array(per["scipy"])))  # noqa: E731
    return {
        "case": kind,
        "n": n,
        "must_link_groups": len(groups),
        "must_linked_points": int(sum(len(g) for g in groups)),
        "must_link_pairs": int(sum(len(g) * (len(g) - 1) // 2 for g in groups)),
        "cannot_links": int(len(cl)),
        "ours_s": med["ours"],
        "ours_first_call_s": t_first,
        "must_link_step_s": med["ml_step"],
        "scipy_complete_s": med["scipy"],
        "ratio_ours_over_scipy": ratio("ours"),
        "ratio_contracted_over_scipy": ratio("ours_contracted") if groups else None,
        "violated": int(len(violated)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="optional JSON file for the numbers")
    ap.add_argument("--itml-only", action="store_true", help="skip the constrained complete-link cases")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds for ITML with <= 1000 pairs")
    ap.add_argument("--itml-pairs", default="200,5000", help="comma-separated ITML constraint counts")
    args = ap.parse_args()
    if args.quick:
        itml_cases, ccl_cases = [(300, 10, 100, 50)], [("random", 500), ("labelled", 500), ("cl-only", 500)]
    else:
        itml_cases = [(2000, 50, int(m), 100) for m in args.itml_pairs.split(",")]
        # ICC's default seed uses cannot-links only; with must-links ICC produces the "labelled" case
        ccl_cases = [(kind, n) for kind in ("random", "labelled", "cl-only") for n in (2000, 5000)]
    if args.itml_only:
        ccl_cases = []
    res = {"itml": [], "ccl": []}
    for case in itml_cases:
        r = bench_itml(*case, rounds=args.rounds)
        res["itml"].append(r)
        print(
            f"ITML {r['n']}x{r['d']} pairs={r['pairs']}: ours {r['ours_s'] * 1e3:.2f} ms "
            f"(first call {r['ours_first_call_s']:.2f}s) metric-learn {r['metric_learn_s'] * 1e3:.1f} ms  "
            f"speedup x{r['speedup']:.1f} (target >= 10)  sweeps {r['sweeps_ours']}/"
            f"{r['sweeps_metric_learn']}  max rel |dA| {r['max_rel_diff_A']:.1e}",
            flush=True,
        )
    for kind, n in ccl_cases:
        r = bench_ccl(kind, n)
        res["ccl"].append(r)
        extra = (
            ""
            if r["ratio_contracted_over_scipy"] is None
            else f" (contracted path: ratio {r['ratio_contracted_over_scipy']:.2f})"
        )
        print(
            f"CCL {kind} n={r['n']} ML groups={r['must_link_groups']} pairs={r['must_link_pairs']} "
            f"CL={r['cannot_links']}: ours {r['ours_s']:.3f}s (must-link step {r['must_link_step_s']:.3f}s) "
            f"scipy complete {r['scipy_complete_s']:.3f}s  ratio {r['ratio_ours_over_scipy']:.2f} "
            f"(target <= 2){extra}  violated {r['violated']}",
            flush=True,
        )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
