"""L3M benchmark: training throughput (items/s) of the jitted optax step vs a NumPy per-item SGD of the same
loss, in
the same run, and inference time per document against document length.

The default step is what ``L3M.fit`` runs: ``train_step`` with ``chunk=auto_chunk(batch, linear=True)``,
i.e. the closed-form gradient of the linear scorer in blocks of items; it is checked to give the same update
as the autodiff step before timing. The last line (``SUMMARY ...``) holds the figure the >= 10x target is
about: the default step's items/s over the NumPy per-item SGD's, best-of timings and the median of 7
interleaved rounds.

With ``--host-devices N`` (N >= 2) JAX sees N CPU devices and the default step, as in ``L3M.fit``, splits the
documents over them (``train_step`` with its batch placed by ``shard_batch``); the same run also times the
one-device step (``shard=False``) interleaved with it, and the SUMMARY lines name the device count.

Usage::

    python benchmarks/bench_l3m.py                     # full sizes
    python benchmarks/bench_l3m.py --quick             # small sizes
    python benchmarks/bench_l3m.py --host-devices 2    # training step over 2 XLA host devices (CPU cores)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

# JAX and jaxclust are imported in main(), after --host-devices has set XLA_FLAGS (read when JAX starts)


def synthetic_docs(n_docs, m, n_ante, n_feat, seed=0):
    from jaxclust.l3m import Document

    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n_docs):
        feats = (rng.random((m, n_ante, n_feat)) < 0.1).astype(np.uint8)  # sparse binary, like coref features
        docs.append(Document(feats, rng.integers(0, m // 4, size=m)))
    return docs


def numpy_item_sgd(docs, w, dummy, lr, l2, gamma):
    """Straightforward per-item SGD: closed-form gradient sum_j p phi - sum_{j in G} q phi, one update per
    item.

    ``docs``: list of (features float32 (m, A, F), gold (m, A), new (m,)) prepared outside the timed region.
    """
    w = w.copy()
    for feats, gold, new in docs:
        for i in range(feats.shape[0]):
            k = min(i, feats.shape[1])
            phi = feats[i, :k]
            logits = np.concatenate([[dummy], phi @ w]) / gamma
            g = np.concatenate([[new[i]], gold[i, :k]])
            p = np.exp(logits - logits.max())
            p /= p.sum()
            q = np.where(g, np.exp(logits - logits[g].max()), 0.0)
            q /= q.sum()
            grad = (p[1:] - q[1:]) @ phi
            w -= lr * (l2 * w + grad)
            dummy -= lr * (p[0] - q[0])
    return w, dummy


def _time_once(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _cpu_once(fn):
    """CPU seconds of this process (all threads) for one call: unlike wall time, barely moved by other jobs
    sharing the cores; a multi-threaded side is charged for every thread, so this can only understate it."""
    t = time.process_time()
    fn()
    return time.process_time() - t


def timeit(fn, repeat):
    fn()  # warm-up / compile
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument(
        "--host-devices",
        type=int,
        default=None,
        help="split the CPU into this many XLA host devices (the training step shards documents over them); "
        "must be set before JAX starts, so it only works when this script is what imports JAX",
    )
    args = ap.parse_args(argv)
    if args.host_devices:
        flag = f"--xla_force_host_platform_device_count={args.host_devices}"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()

    import jax
    import jax.numpy as jnp
    import optax

    from jaxclust.l3m import LinearScorer, pad_batch
    from jaxclust.l3m.infer import predict_batch
    from jaxclust.l3m.train import auto_chunk, closed_form, online_epoch, shard_batch, train_step

    n_dev = jax.device_count()
    n_docs, m, n_ante, n_feat = (8, 64, 32, 32) if args.quick else (16, 256, 128, 128)
    docs = synthetic_docs(n_docs, m, n_ante, n_feat)
    n_items = n_docs * m
    batch = jax.device_put(pad_batch(docs, n_docs=n_docs))
    # what fit_scorer trains on: the documents placed across the devices once (the same batch if one device)
    batch_dev = shard_batch(batch)
    gamma, l2, wt = jnp.float32(0.5), jnp.float32(1e-4), jnp.float32(0.0)
    opt = optax.sgd(0.01)
    scorer = LinearScorer(n_feat)
    state = opt.init(scorer)
    res = {
        "device": str(jax.devices()[0]),
        "n_devices": n_dev,
        "platform": platform.platform(),
        "sizes": dict(n_docs=n_docs, items_per_doc=m, antecedents=n_ante, features=n_feat),
    }

    # the default step is what L3M.fit / fit_scorer run: chunk="auto" (closed-form gradient for LinearScorer)
    chunk = auto_chunk(batch, linear=closed_form(scorer))
    chunk_ad = auto_chunk(batch)
    res["default_chunk"] = chunk

    def default_step():
        jax.block_until_ready(train_step(scorer, state, batch_dev, gamma, l2, wt, opt.update, chunk=chunk))

    def one_device_step():  # today's single-device path, same chunk
        jax.block_until_ready(
            train_step(scorer, state, batch, gamma, l2, wt, opt.update, chunk=chunk, shard=False)
        )

    def batch_step():
        jax.block_until_ready(train_step(scorer, state, batch, gamma, l2, wt, opt.update))

    def autodiff_chunked_step():
        jax.block_until_ready(
            train_step(scorer, state, batch, gamma, l2, wt, opt.update, chunk=chunk_ad, autodiff=True)
        )

    def item_epoch():
        jax.block_until_ready(online_epoch(scorer, state, batch, gamma, l2, wt, opt.update))

    # same answer on both sides of every comparison: the default step's update equals the autodiff step's
    ref = train_step(scorer, state, batch, gamma, l2, wt, opt.update)[0]
    new = train_step(scorer, state, batch_dev, gamma, l2, wt, opt.update, chunk=chunk)[0]
    np.testing.assert_allclose(np.asarray(new.weight), np.asarray(ref.weight), rtol=1e-4, atol=1e-7)
    one = train_step(scorer, state, batch, gamma, l2, wt, opt.update, chunk=chunk, shard=False)[0]
    np.testing.assert_allclose(np.asarray(one.weight), np.asarray(ref.weight), rtol=1e-4, atol=1e-7)
    t_default = timeit(default_step, 5)
    t_batch = timeit(batch_step, 5)
    t_chunk = timeit(autodiff_chunked_step, 5)
    t_item = timeit(item_epoch, 3)
    n_np = max(1, n_docs // 8)
    np_docs = [(d.features.astype(np.float32), *d.gold_links()) for d in docs[:n_np]]
    t_np = min(
        _time_once(lambda: numpy_item_sgd(np_docs, np.zeros(n_feat, np.float32), 0.0, 0.01, 1e-4, 0.5))
        for _ in range(3)
    ) / (n_np * m)  # seconds per item, best of 3
    res["train_items_per_s"] = {
        "jax_default_step": n_items / t_default,
        "jax_batch_step": n_items / t_batch,
        "jax_batch_step_autodiff_chunked": n_items / t_chunk,
        "jax_per_item_scan": n_items / t_item,
        "numpy_per_item_sgd": 1.0 / t_np,
    }

    # contention-robust ratio: alternate the two sides in rounds and take the median of per-round ratios
    # (wall time), and the same from CPU time
    def numpy_doc():
        numpy_item_sgd(np_docs[:1], np.zeros(n_feat, np.float32), 0.0, 0.01, 1e-4, 0.5)

    ratios, cpu_ratios, dev_ratios = [], [], []
    for _ in range(7):
        tj = min(_time_once(default_step) for _ in range(2)) / n_items
        tn = _time_once(numpy_doc) / m
        ratios.append(tn / tj)
        if n_dev > 1:  # speed-up of the sharded step over the one-device step, same rounds
            dev_ratios.append(min(_time_once(one_device_step) for _ in range(2)) / n_items / tj)
        cj = min(_cpu_once(default_step) for _ in range(2)) / n_items
        cpu_ratios.append((_cpu_once(numpy_doc) / m) / cj)
    res["train_ratio_default_vs_numpy_interleaved"] = {
        "median": float(np.median(ratios)),
        "min": float(np.min(ratios)),
        "max": float(np.max(ratios)),
    }
    res["train_ratio_default_vs_numpy_interleaved_cpu_time"] = {
        "median": float(np.median(cpu_ratios)),
        "min": float(np.min(cpu_ratios)),
        "max": float(np.max(cpu_ratios)),
    }
    if n_dev > 1:
        res["train_ratio_sharded_vs_one_device_interleaved"] = {
            "median": float(np.median(dev_ratios)),
            "min": float(np.min(dev_ratios)),
            "max": float(np.max(dev_ratios)),
        }
    res["train_ratio_default_vs_numpy"] = res["train_items_per_s"]["jax_default_step"] * t_np
    res["train_ratio_batch_vs_numpy"] = res["train_items_per_s"]["jax_batch_step"] * t_np
    res["train_ratio_autodiff_chunked_vs_numpy"] = (
        res["train_items_per_s"]["jax_batch_step_autodiff_chunked"] * t_np
    )
    res["train_ratio_item_scan_vs_numpy"] = res["train_items_per_s"]["jax_per_item_scan"] * t_np
    # inference per document vs length (full antecedent set, A = m - 1)
    res["inference_ms_per_doc"] = {}
    lengths = (32, 64, 128) if args.quick else (32, 64, 128, 256, 512)
    w = LinearScorer(16, np.random.default_rng(1).normal(size=16), 0.0)
    for length in lengths:
        d = synthetic_docs(1, length, length - 1, 16, seed=length)[0]
        b = jax.device_put(pad_batch([d]))
        g, t = jnp.float32(0.5), jnp.float32(0.5)
        row = {}
        for name, best in (("greedy", False), ("best_left_link", True)):

            def run(b=b, g=g, t=t, best=best):
                return jax.block_until_ready(predict_batch(w, b, g, t, wt, best))

            row[name] = 1e3 * timeit(run, 5)
        res["inference_ms_per_doc"][length] = row
    print(json.dumps(res, indent=1))
    r = res["train_ratio_default_vs_numpy_interleaved"]
    print(
        f"SUMMARY train throughput, default step (train_step chunk={chunk}, as L3M.fit) on {n_dev} "
        f"device{'s' if n_dev > 1 else ''}: "
        f"{res['train_items_per_s']['jax_default_step']:,.0f} items/s vs NumPy per-item SGD "
        f"{res['train_items_per_s']['numpy_per_item_sgd']:,.0f} items/s = "
        f"{res['train_ratio_default_vs_numpy']:.1f}x best-of; interleaved median {r['median']:.1f}x "
        f"(range {r['min']:.1f}-{r['max']:.1f}x); target >= 10x"
    )
    r = res["train_ratio_default_vs_numpy_interleaved_cpu_time"]
    print(
        f"SUMMARY same ratio from process CPU time (robust to other jobs on the cores; understates a "
        f"multi-device step) on {n_dev} device{'s' if n_dev > 1 else ''}: median "
        f"{r['median']:.1f}x (range {r['min']:.1f}-{r['max']:.1f}x)"
    )
    if n_dev > 1:
        r = res["train_ratio_sharded_vs_one_device_interleaved"]
        print(
            f"SUMMARY default step on {n_dev} devices vs the same step on one device (shard=False), "
            f"interleaved median {r['median']:.2f}x (range {r['min']:.2f}-{r['max']:.2f}x)"
        )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=1)
    return res


if __name__ == "__main__":
    main()
