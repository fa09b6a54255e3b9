"""Time jaxclust.metrics against scikit-learn (partition metrics) and scorch (coreference metrics).

Usage: ``python benchmarks/bench_metrics.py [--n 1000000] [--batch 64] [--repeats 5]``

Measurements (best of ``--repeats`` wall-clock runs, same inputs for both sides, ratio = ours / peer):

1. host V-measure and ARI on ``--n`` items (50 classes, 200 clusters) and on an all-singleton prediction,
   against ``sklearn.metrics.v_measure_score`` / ``adjusted_rand_score``;
2. jitted ``jax.vmap`` V-measure over ``--batch`` predicted labelings of 2,000 items (capacity 64 labels),
   against a Python loop of ``sklearn.metrics.v_measure_score`` (compile time reported separately);
3. per-document coreference metrics on 200 random documents (40 mentions each) against ``scorch.scores``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _row(name: str, ours: float, peer: float) -> None:
    print(f"{name:52s} {ours * 1e3:10.2f} {peer * 1e3:10.2f} {ours / peer:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    from scorch import scores as sc
    from sklearn import metrics as skm

    from jaxclust.metrics import coref as M
    from jaxclust.metrics import jax_partition as J
    from jaxclust.metrics import partition as P

    rng = np.random.default_rng(0)
    y = rng.integers(0, 50, args.n)
    z = rng.integers(0, 200, args.n)
    zs = np.arange(args.n)
    print(f"{'measurement':52s} {'ours ms':>10s} {'peer ms':>10s} {'ratio':>8s}")
    for name, ours, peer in [
        (f"v_measure n={args.n}", lambda: P.v_measure(y, z), lambda: skm.v_measure_score(y, z)),
        (
            f"adjusted_rand_index n={args.n}",
            lambda: P.adjusted_rand_index(y, z),
            lambda: skm.adjusted_rand_score(y, z),
        ),
        (
            f"v_measure n={args.n}, all singletons",
            lambda: P.v_measure(y, zs),
            lambda: skm.v_measure_score(y, zs),
        ),
        (
            f"adjusted_rand_index n={args.n}, all singletons",
            lambda: P.adjusted_rand_index(y, zs),
            lambda: skm.adjusted_rand_score(y, zs),
        ),
    ]:
        _row(name, _best(ours, args.repeats), _best(peer, args.repeats))

    n_items, cap = 2000, 64
    yb = rng.integers(0, 20, n_items)
    zb = rng.integers(0, cap, (args.batch, n_items))
    yj, zj = jnp.asarray(yb), jnp.asarray(zb)
    batched = jax.jit(jax.vmap(lambda zz: J.v_measure(yj, zz, n_classes=cap, n_clusters=cap)))
    t0 = time.perf_counter()
    batched(zj).block_until_ready()
    compile_s = time.perf_counter() - t0
    ours = _best(lambda: batched(zj).block_until_ready(), args.repeats)
    peer = _best(lambda: [skm.v_measure_score(yb, zz) for zz in zb], args.repeats)
    _row(f"vmapped v_measure {args.batch} x {n_items} (jit, f32)", ours, peer)
    print(f"  (first call incl. compile: {compile_s * 1e3:.0f} ms)")
    host_loop = _best(lambda: [P.v_measure(yb, zz) for zz in zb], args.repeats)
    _row(f"host v_measure loop {args.batch} x {n_items}", host_loop, peer)

    docs = []
    for _ in range(200):
        ids = rng.permutation(60)[:40]
        klab = rng.integers(0, 8, 40)
        key = [set(ids[klab == k].tolist()) for k in range(8)]
        resp_ids = np.concatenate([ids[:35], 100 + np.arange(5)])
        lab = rng.integers(0, 10, 40)
        resp = [set(resp_ids[lab == k].tolist()) for k in range(10)]
        docs.append(([k for k in key if k], [r for r in resp if r]))
    for name, ours_fn, peer_fn in [
        ("muc", M.muc, sc.muc),
        ("b_cubed", M.b_cubed, sc.b_cubed),
        ("ceaf_e", M.ceaf_e, sc.ceaf_e),
        ("blanc", M.blanc, sc.blanc),
    ]:
        o = _best(lambda f=ours_fn: [f(k, r) for k, r in docs], args.repeats)
        p = _best(lambda f=peer_fn: [f(k, r) for k, r in docs], args.repeats)
        _row(f"{name} x 200 documents", o, p)
    o = _best(lambda: M.corpus_scores([k for k, _ in docs], [r for _, r in docs]), args.repeats)
    p = _best(
        lambda: [f(k, r) for k, r in docs for f in (sc.muc, sc.b_cubed, sc.ceaf_m, sc.ceaf_e, sc.blanc)],
        args.repeats,
    )
    _row("corpus_scores (6 metrics) vs scorch 5 metrics, 200 docs", o, p)


if __name__ == "__main__":
    main()
