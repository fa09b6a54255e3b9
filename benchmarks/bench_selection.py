"""Benchmark: exact top-k link-entropy selection at 10^3 to 10^5 items (issue 14, section 2).

Ours: ``top_entropy_pairs`` (signatures + sampled components, dense signature sweep as the fallback).
Reference: ``_dense_select``, the O(n^2) blockwise sweep over all item pairs that ``top_entropy_pairs`` was before;
both run where the reference is affordable, must return the same list (pairs, order, entropies), and the
ratio reference/ours is printed. Top-10 pairs from S = 40 samples, no constraints.

Sample sets (all seeded; labels permuted in every sample, as label switching does):

* ``posterior``: what a converged sampler gives. 50 clusters (Dirichlet(2) sizes); 8 % of items sit on a
  boundary and take an alternative cluster in each sample with probability U(0.1, 0.5); 0.2 % of items per
  sample land in a random cluster; cluster 0 splits in two in 30 % of samples, clusters 1 and 2 merge in 20 %.
  About 3 % of items change cluster between consecutive samples.
* ``diffuse``: a poorly mixed posterior: each sample moves 3 % of items, chosen independently, to a random
  cluster; most items then move in some sample, so most items have a label vector of their own.
* ``uncertain`` (the worst case): every sample an independent uniform partition into 50 clusters; every item
  is its own signature and every pair has positive entropy, so no exact method can skip pairs: the fallback
  sweeps all n^2/2 signature pairs, like the reference.

Each measurement runs in a fresh subprocess (its own peak RSS); times are the median of repeated calls after a
first call that includes compilation. Prints only; writes nothing.

    python benchmarks/bench_selection.py            # under a minute on a quiet 2-core CPU
    python benchmarks/bench_selection.py --full     # also diffuse and uncertain at n = 10^5 (minutes)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

S, K_CLUSTERS, TOP_K = 40, 50, 10


def posterior(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    home = rng.choice(K_CLUSTERS, n, p=rng.dirichlet(np.full(K_CLUSTERS, 2.0)))
    alt = rng.integers(0, K_CLUSTERS - 1, n)
    alt += alt >= home
    p_alt = np.where(rng.random(n) < 0.08, rng.uniform(0.1, 0.5, n), 0.0)
    z = np.where(rng.random((S, n)) < p_alt, alt, home)
    noise = rng.random((S, n)) < 0.002
    z[noise] = rng.integers(0, K_CLUSTERS, noise.sum())
    half = rng.random(n) < 0.5
    z[np.ix_(rng.random(S) < 0.3, (home == 0) & half)] = K_CLUSTERS  # cluster 0 splits
    merge = rng.random(S) < 0.2
    zm = z[merge]
    zm[zm == 2] = 1  # clusters 1 and 2 merge
    z[merge] = zm
    return _switch_labels(rng, z)


def diffuse(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = np.repeat(rng.integers(0, K_CLUSTERS, n)[None], S, axis=0)
    move = rng.random((S, n)) < 0.03
    z[move] = rng.integers(0, K_CLUSTERS, move.sum())
    return _switch_labels(rng, z)


def uncertain(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return _switch_labels(rng, rng.integers(0, K_CLUSTERS, (S, n)))


def _switch_labels(rng, z):
    moved = float(np.mean(z[1:] != z[:-1]))  # before relabelling: items that change cluster per step
    perm = np.argsort(rng.random((S, K_CLUSTERS + 1)), axis=1)
    return np.take_along_axis(perm, z, axis=1).astype(np.int32), moved


KINDS = {"posterior": posterior, "diffuse": diffuse, "uncertain": uncertain}


def _child(kind: str, n: int, which: str, repeats: int) -> dict:
    z, moved = KINDS[kind](n)
    from jaxclust.active import entropy as E

    def dense(samples, k):
        return E._dense_select(*E._validate(samples, k, None, None, (), None))

    fn = E.top_entropy_pairs if which == "ours" else dense
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    out = fn(z, TOP_K)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(z, TOP_K)
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    seconds = float(np.median(times)) if times else first  # repeats 0: one call, compilation included
    row = {"seconds": seconds, "first": first, "peak_mb": peak / 1024}
    row["growth_mb"] = (peak - base) / 1024
    row["pairs"] = [list(p) for p in out]
    if which == "ours":  # what the fast path saw (private helpers, the same ones top_entropy_pairs uses)
        sg = E._signatures(z)
        comp, sizes, _ = E._components(sg.labels)
        work = sizes[comp].sum(axis=1)
        member, weighted_t = E._membership(comp, len(sizes), np.ones(S, np.float32))
        sparse = sg.m >= 2 and E._sparse_is_cheaper(member, weighted_t, work, S)
        row.update(m=sg.m, updates=float(work.sum()), route="components" if sparse else "dense sweep")
        row["moved"] = moved
    return row


def _run(kind: str, n: int, which: str, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, str(n), which, str(repeats)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{kind} n={n} {which} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also run diffuse and uncertain at n = 10^5")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, n, which, repeats = args.child
        print(json.dumps(_child(kind, int(n), which, int(repeats))))
        return

    import jax

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"bench_selection  {now}")
    print(f"machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPU cores, ", end="")
    print(f"load average {os.getloadavg()[0]:.1f}; jax {jax.__version__} ({jax.default_backend()})")
    print(
        f"S = {S} samples, top-{TOP_K} pairs, no constraints; times: median after a first (compiling) call\n"
    )

    plan = [  # (kind, n, run the reference too, repeats)
        ("posterior", 2_000, True, 5),
        ("diffuse", 2_000, True, 5),
        ("uncertain", 2_000, True, 5),
        ("posterior", 10_000, True, 3),
        ("diffuse", 10_000, False, 3),
        ("uncertain", 10_000, False, 2),
        ("posterior", 100_000, False, 2),
    ]
    if args.full:
        plan += [("diffuse", 100_000, False, 0), ("uncertain", 100_000, False, 0)]  # one call each
    head = (
        f"{'samples':<10} {'n':>7} {'moved':>6} {'m':>7} {'updates':>9} {'route':<11} {'ours s':>8} "
        f"{'(first)':>8} {'RSS MB':>7} {'ref s':>8} {'(first)':>8} {'RSS MB':>7} {'ref/ours':>8} same"
    )
    print(head)
    print("-" * len(head))
    rows = {}
    for kind, n, with_ref, repeats in plan:
        ours = _run(kind, n, "ours", repeats)
        rows[kind, n] = ours
        line = (
            f"{kind:<10} {n:>7} {ours['moved']:>6.1%} {ours['m']:>7} {ours['updates']:>9.2e} "
            f"{ours['route']:<11} {ours['seconds']:>8.3f} {ours['first']:>8.2f} {ours['peak_mb']:>7.0f}"
        )
        if with_ref:
            ref = _run(kind, n, "ref", repeats)
            same = "yes" if ref["pairs"] == ours["pairs"] else "NO"
            line += (
                f" {ref['seconds']:>8.3f} {ref['first']:>8.2f} {ref['peak_mb']:>7.0f} "
                f"{ref['seconds'] / ours['seconds']:>7.1f}x {same}"
            )
        print(line, flush=True)
    if not args.full:
        print("\nnot run at n = 100000 (use --full); O(n^2) extrapolation from n = 10000:")
        for kind in ("diffuse", "uncertain"):
            print(f"  {kind}: about {rows[kind, 10_000]['seconds'] * 100:.0f} s")
    print("\nmoved: items that change cluster between consecutive samples; m: distinct label vectors;")
    print("updates: sum over samples and components of (signatures in the component)^2.")


if __name__ == "__main__":
    main()
