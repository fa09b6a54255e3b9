"""Benchmark: link-entropy selection memory/time, and the cost of one active-learning round.

Part 1 (``selection``): top-10 unknown pairs by link entropy from S = 100 sampled partitions, n = 2000 and
n = 20000 items. Ours: the blockwise jitted sweep (``top_entropy_pairs``, one (block, n) float32 block live).
Peer: dense NumPy (one-hot matmul for the n x n co-clustering in float64, entropy, mask, argpartition), the
obvious implementation; it is run only where its n x n matrices fit comfortably (n <= 5000), otherwise its
memory need is printed. Each measurement runs in a fresh subprocess so peak RSS (ru_maxrss) is its own.

Part 2 (``round``): wine (178 x 13), DPMM with the seed paper's settings (5 chains, 20 samples 5 apart).
Measures the cost of one Gibbs sweep (slope of fit time against burn-in sweeps), one warm-started AL round
(refit with 20 burn-in sweeps from the previous chains + batch selection of 5 pairs) and, as the peer, the
paper's protocol of refitting from scratch with 100 burn-in sweeps each round.

    python benchmarks/bench_active.py            # both parts
    python benchmarks/bench_active.py --part selection --sizes 2000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

S, K_LABELS, TOP_K = 100, 40, 10


def _samples(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, K_LABELS, n)
    z = np.repeat(base[None], S, axis=0)
    flip = rng.random((S, n)) < 0.2  # posterior-like: mostly agreeing samples, some uncertainty
    z[flip] = rng.integers(0, K_LABELS, flip.sum())
    return z


def _peer_dense(z: np.ndarray, k: int) -> list[tuple[int, int]]:
    Sn, n = z.shape
    onehot = np.zeros((n, Sn * K_LABELS))
    onehot[np.repeat(np.arange(n), Sn), (np.arange(Sn)[None, :] * K_LABELS + z.T).ravel()] = 1.0
    p = onehot @ onehot.T / Sn  # (n, n) float64
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.nan_to_num(-(p * np.log(p)) - (1 - p) * np.log(1 - p))
    h[np.tril_indices(n)] = -np.inf
    flat = np.argpartition(h.ravel(), -k)[-k:]
    pairs = sorted(((int(f // n), int(f % n)) for f in flat), key=lambda t: -h[t])
    return pairs, [float(h[t]) for t in pairs]


def _child_selection(which: str, n: int) -> dict:
    z = _samples(n)
    if which == "ours":
        from jaxclust.active.entropy import top_entropy_pairs  # JAX runtime loaded before the baseline
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if which == "ours":
        t0 = time.perf_counter()
        top_entropy_pairs(z, TOP_K)  # includes compilation
        first = time.perf_counter() - t0
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            out = top_entropy_pairs(z, TOP_K)
            times.append(time.perf_counter() - t0)
        pairs = [(i, j) for i, j, _ in out]
        values = [h for _, _, h in out]
    else:
        first = float("nan")
        times = []
        for _ in range(2 if n <= 2500 else 1):
            t0 = time.perf_counter()
            pairs, values = _peer_dense(z, TOP_K)
            times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "which": which,
        "n": n,
        "seconds": float(np.median(times)),
        "first_call_seconds": first,
        "peak_rss_mb": peak / 1024,
        "rss_growth_mb": (peak - base) / 1024,
        "pairs": pairs,
        "values": values,
    }


def bench_selection(sizes) -> list[dict]:
    rows = []
    for n in sizes:
        res = {}
        for which in ("ours", "peer"):
            if which == "peer" and n > 5000:
                need = 3 * n * n * 8 / 2**30
                print(
                    f"n={n}: dense NumPy peer not run (needs ~{need:.0f} GiB for three n x n float64 arrays)"
                )
                continue
            out = subprocess.run(
                [sys.executable, __file__, "--child", which, "--n", str(n)],
                capture_output=True,
                text=True,
                check=True,
            )
            res[which] = json.loads(out.stdout.strip().splitlines()[-1])
        ours = res["ours"]
        line = (
            f"n={n}: ours {ours['seconds']:.3f} s "
            f"(first call incl. compile {ours['first_call_seconds']:.1f} s), "
            f"peak RSS {ours['peak_rss_mb']:.0f} MB (+{ours['rss_growth_mb']:.0f} MB)"
        )
        if "peer" in res:
            peer = res["peer"]
            # many pairs tie at the top; compare the top-k entropy values (ties may pick different pairs)
            same = np.allclose(sorted(peer["values"]), sorted(ours["values"]), atol=1e-6)
            line += (
                f"; dense NumPy {peer['seconds']:.3f} s, peak RSS {peer['peak_rss_mb']:.0f} MB "
                f"(+{peer['rss_growth_mb']:.0f} MB); "
                f"time ratio peer/ours {peer['seconds'] / ours['seconds']:.2f}"
                f"; same top-{TOP_K} entropies: {same}"
            )
        print(line, flush=True)
        rows.append(res)
    return rows


def bench_round() -> dict:
    from jaxclust.active import GoldOracle
    from jaxclust.active.entropy import top_entropy_pairs
    from jaxclust.apps.demo import load_wine_standardised
    from jaxclust.constraints import Constraints
    from jaxclust.dpmm import DPMM

    X, y = load_wine_standardised()
    m = DPMM(n_chains=5, n_burnin=100, n_samples=20, thin=5, random_state=0)
    m.fit(X)  # compile

    def timed(**kw):
        t0 = time.perf_counter()
        m.fit(X, **kw)
        return time.perf_counter() - t0

    t_b0 = np.median([timed(n_burnin=0) for _ in range(3)])  # 100 sampling sweeps only
    t_b100 = np.median([timed(n_burnin=100) for _ in range(3)])  # the paper's 100 + 100 sweeps
    t_b300 = np.median([timed(n_burnin=300) for _ in range(3)])
    sweep = (t_b300 - t_b0) / 300  # marginal cost of one sweep of all 5 chains
    oracle, cons = GoldOracle(y), Constraints(len(y))
    warm_rounds, cold_rounds = [], []
    for r in range(8):  # the first rounds compile the constrained shapes (partner-table widths); not timed
        t0 = time.perf_counter()
        for i, j, _ in top_entropy_pairs(m.samples_, 5, cons):
            if cons.status(i, j) is None:
                cons = cons.with_constraint(i, j, oracle(i, j) == "must")
        t_sel = time.perf_counter() - t0
        prev = m.final_labels_
        t_cold = t_sel + timed(constraints=cons, n_burnin=100)
        m.fit(X, constraints=cons, init_labels=prev, n_burnin=20)  # same shapes as the timed warm fit
        t_warm = t_sel + timed(constraints=cons, init_labels=prev, n_burnin=20)
        if r >= 4:
            warm_rounds.append(t_warm)
            cold_rounds.append(t_cold)
    out = {
        "sweep_seconds": sweep,
        "fit_0_burnin_seconds": t_b0,
        "fit_100_burnin_seconds": t_b100,
        "warm_round_seconds": float(np.median(warm_rounds)),
        "cold_round_seconds": float(np.median(cold_rounds)),
        "selection_seconds_last": t_sel,
    }
    print(
        f"wine, 5 chains: one Gibbs sweep (all chains) {sweep * 1e3:.1f} ms (slope, 0 vs 300 burn-in); "
        f"fit with 100 sampling sweeps only {t_b0:.2f} s; full fit (100 burn-in + 100 sampling "
        f"sweeps) {t_b100:.2f} s"
    )
    print(
        f"AL round (select 5 + refit): warm start, 20 burn-in {out['warm_round_seconds']:.2f} s "
        f"(= {out['warm_round_seconds'] / sweep:.0f} sweeps); peer: cold refit, 100 burn-in "
        f"{out['cold_round_seconds']:.2f} s; "
        f"ratio cold/warm {out['cold_round_seconds'] / out['warm_round_seconds']:.2f}; "
        f"selection alone {t_sel * 1e3:.0f} ms"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("selection", "round", "all"), default="all")
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    ap.add_argument("--child", choices=("ours", "peer"))
    ap.add_argument("--n", type=int)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child_selection(args.child, args.n)))
        return
    print(f"date {time.strftime('%Y-%m-%d %H:%M')}; S = {S} samples, top-{TOP_K} pairs")
    if args.part in ("selection", "all"):
        bench_selection(args.sizes)
    if args.part in ("round", "all"):
        bench_round()


if __name__ == "__main__":
    main()
