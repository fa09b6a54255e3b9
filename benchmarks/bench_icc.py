"""Benchmark: jaxclust ITML vs metric-learn, and constrained complete link vs scipy's plain complete linkage.

Both sides run in the same process on the same inputs; the script prints times and ratios (no assertions).

    python benchmarks/bench_icc.py            # ITML 2000x50 with 200 / 5000 pairs; CCL at n = 2000, 5000
    python benchmarks/bench_icc.py --quick    # small shapes, a smoke run
"""

from __future__ import annotations

import argparse
import json
import time

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


def bench_itml(n, d, m, max_iter, seed=0):
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
    _, t_ours = _timed(lambda: ours.fit(X, P, y), repeat=3 if m <= 1000 else 1)
    ref = RefITML(prior="identity", max_iter=max_iter)
    _, t_ref = _timed(lambda: ref.fit(X[P], y, bounds=bounds.copy()), repeat=3 if m <= 1000 else 1)
    A, A_ref = ours.get_mahalanobis_matrix(), ref.get_mahalanobis_matrix()
    return {
        "n": n,
        "d": d,
        "pairs": int(len(P)),
        "max_iter": max_iter,
        "ours_s": t_ours,
        "ours_first_call_s": t_first,
        "metric_learn_s": t_ref,
        "speedup": t_ref / t_ours,
        "sweeps_ours": ours.n_iter_,
        "sweeps_metric_learn": int(ref.n_iter_) + 1,
        "max_rel_diff_A": float(np.abs(A - A_ref).max() / np.abs(A_ref).max()),
    }


def bench_ccl(n, d, n_ml, n_cl, k=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    D = euclidean_distances(X)
    ml = rng.choice(n, size=(n_ml, 2), replace=False)
    groups = [np.asarray(p) for p in ml]
    cl = rng.integers(0, n, size=(n_cl, 2))
    cl = cl[(cl[:, 0] != cl[:, 1]) & ~np.isin(cl, ml).any(axis=1)]
    propagate_must_links(D[:64, :64], [np.array([0, 1])])  # compile the small case once: keeps warm-up out
    _, t_first = _timed(lambda: constrained_complete_link(D, k, groups, cl))
    rep = 3 if n <= 2000 else 2
    (labels, _, _, violated), t_ours = _timed(lambda: constrained_complete_link(D, k, groups, cl), rep)
    _, t_ml = _timed(lambda: propagate_must_links(D, groups), rep)

    def plain():
        Z = linkage(squareform(D, checks=False), method="complete")
        return fcluster(Z, k, criterion="maxclust")

    _, t_ref = _timed(plain, rep)
    return {
        "n": n,
        "must_links": n_ml,
        "cannot_links": int(len(cl)),
        "ours_s": t_ours,
        "ours_first_call_s": t_first,
        "must_link_step_s": t_ml,
        "scipy_complete_s": t_ref,
        "ratio_ours_over_scipy": t_ours / t_ref,
        "violated": int(len(violated)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="optional JSON file for the numbers")
    args = ap.parse_args()
    if args.quick:
        itml_cases, ccl_cases = [(300, 10, 100, 50)], [(500, 10, 20, 100)]
    else:
        itml_cases = [(2000, 50, 200, 100), (2000, 50, 5000, 100)]
        # (n, d, must-links, cannot-links); ICC's default (cannot-links only) is the 0-must-link row
        ccl_cases = [(2000, 20, 50, 500), (5000, 20, 50, 500), (2000, 20, 0, 500), (5000, 20, 0, 500)]
    res = {"itml": [], "ccl": []}
    for case in itml_cases:
        r = bench_itml(*case)
        res["itml"].append(r)
        print(
            f"ITML {r['n']}x{r['d']} pairs={r['pairs']}: ours {r['ours_s']:.3f}s "
            f"(first call {r['ours_first_call_s']:.2f}s) metric-learn {r['metric_learn_s']:.3f}s  "
            f"speedup x{r['speedup']:.1f}  sweeps {r['sweeps_ours']}/"
            f"{r['sweeps_metric_learn']}  max rel |dA| {r['max_rel_diff_A']:.1e}",
            flush=True,
        )
    for case in ccl_cases:
        r = bench_ccl(*case)
        res["ccl"].append(r)
        print(
            f"CCL n={r['n']} ML={r['must_links']} CL={r['cannot_links']}: ours {r['ours_s']:.2f}s "
            f"(must-link step {r['must_link_step_s']:.2f}s) scipy complete {r['scipy_complete_s']:.2f}s  "
            f"ratio {r['ratio_ours_over_scipy']:.2f}  violated {r['violated']}",
            flush=True,
        )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
