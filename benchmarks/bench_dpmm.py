"""Benchmark: chain-point-updates per second of jaxclust's collapsed sampler (an iteration: a split-merge round
and a Gibbs sweep, as ``DPMM().fit`` runs it; ``--split-merge 0``: the sweep alone) vs a straightforward NumPy
collapsed Gibbs sweep of the same model (diagonal Normal-Gamma DPMM, fixed alpha), both timed in the same run.

The NumPy reference is what one writes by hand: one Python step per item, vectorised over the occupied
components (plus the new one), float64, per-component posterior parameters updated incrementally.

Our side, by default (``--capacity auto``), is what ``DPMM().fit`` runs: ``jaxclust.dpmm.chains.run_chains`` with
its own slot policy (slots track the occupied count, grown when needed); two warm-up calls of the same size
first (burn-in from the random start, and the compiles), then the timed call continues from the warm-up's final
labels (a growth inside the timed call would be timed, compile included: the summary reports growths).
``--capacity N`` instead times the block function alone with N slots, as before.

Usage::

    python benchmarks/bench_dpmm.py                 # N=2000, D=35; 1, 16, 64 chains; short scale curve
    python benchmarks/bench_dpmm.py --quick         # smaller, for a smoke run
    python benchmarks/bench_dpmm.py --chains 1024 --no-scale   # e.g. on a GPU
    python benchmarks/bench_dpmm.py --host-devices 2 --no-scale   # chains sharded over 2 CPU cores

Prints one line per configuration and a JSON summary (``--out FILE`` writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
from scipy.special import gammaln

from jaxclust.dpmm.kernels import Kernel


def kernel(split_merge: int) -> Kernel:
    """Our iteration: ``split_merge`` rounds (1: what ``DPMM().fit`` runs, the compile-once issue's target; 0:
    the Gibbs sweep alone, the NumPy reference's own iteration) and the collapsed Gibbs sweep."""
    return Kernel("collapsed", split_merge=split_merge)


def make_data(n: int, d: int, k: int = 10, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 3.0, size=(k, d))
    return centers[rng.integers(0, k, n)] + rng.normal(size=(n, d))


class NumpyGibbs:
    """Reference collapsed Gibbs for the diagonal Normal-Gamma DPMM (docs/algorithms/dpmm.md (a), (f))."""

    def __init__(self, X, mean, kappa, shape, rate, alpha, seed=0):
        self.X = np.asarray(X, float)
        self.m0, self.k0, self.a0, self.b0 = (
            np.asarray(mean, float),
            float(kappa),
            float(shape),
            np.asarray(rate),
        )
        self.alpha = float(alpha)
        self.rng = np.random.default_rng(seed)
        n = len(X)
        self.z = self.rng.integers(0, 10, n)
        # per-component posterior parameters, grown as needed
        self.n = np.zeros(0)
        self.kap = np.zeros(0)
        self.mu = np.zeros((0, X.shape[1]))
        self.rate = np.zeros((0, X.shape[1]))
        _, self.z = np.unique(self.z, return_inverse=True)
        for _ in range(self.z.max() + 1):
            self._new_component()
        for i in range(n):
            self._add(i, self.z[i])

    def _new_component(self):
        self.n = np.append(self.n, 0.0)
        self.kap = np.append(self.kap, self.k0)
        self.mu = np.vstack([self.mu, self.m0])
        self.rate = np.vstack([self.rate, self.b0])

    def _add(self, i, k):
        x = self.X[i]
        kn = self.kap[k]
        self.rate[k] += kn * (x - self.mu[k]) ** 2 / (2 * (kn + 1))
        self.mu[k] = (kn * self.mu[k] + x) / (kn + 1)
        self.kap[k] = kn + 1
        self.n[k] += 1

    def _remove(self, i, k):
        x = self.X[i]
        kn = self.kap[k] - 1
        if self.n[k] == 1:
            self.kap[k], self.mu[k], self.rate[k], self.n[k] = self.k0, self.m0, self.b0, 0
            return
        self.mu[k] = (self.kap[k] * self.mu[k] - x) / kn
        self.rate[k] -= kn * (x - self.mu[k]) ** 2 / (2 * (kn + 1))
        self.kap[k] = kn
        self.n[k] -= 1

    def sweep(self):
        D = self.X.shape[1]
        for i in self.rng.permutation(len(self.X)):
            k_old = self.z[i]
            self._remove(i, k_old)
            occ = np.flatnonzero(self.n > 0)
            empty = np.flatnonzero(self.n == 0)
            if len(empty) == 0:
                self._new_component()
                empty = np.array([len(self.n) - 1])
            cand = np.append(occ, empty[0])
            kn, mu, rate = self.kap[cand], self.mu[cand], self.rate[cand]
            an = self.a0 + 0.5 * self.n[cand]
            # Student-t predictive of x under every candidate, vectorised over components
            x = self.X[i]
            lp = (
                D * (gammaln(an + 0.5) - gammaln(an))
                - 0.5 * np.log(2 * np.pi * rate * (kn[:, None] + 1) / kn[:, None]).sum(1)
                - (an + 0.5) * np.log1p(kn[:, None] * (x - mu) ** 2 / (2 * rate * (kn[:, None] + 1))).sum(1)
            )
            prior = np.append(self.n[occ], self.alpha)
            logits = lp + np.log(prior)
            p = np.exp(logits - logits.max())
            k_new = cand[np.searchsorted(np.cumsum(p), self.rng.random() * p.sum())]
            self._add(i, k_new)
            self.z[i] = k_new


def time_numpy(X, prior, alpha, sweeps):
    ref = NumpyGibbs(X, prior.mean, prior.kappa, prior.shape, prior.rate, alpha)
    ref.sweep()  # warm-up
    t = time.perf_counter()
    for _ in range(sweeps):
        ref.sweep()
    dt = time.perf_counter() - t
    return len(X) * sweeps / dt, int((ref.n > 0).sum())


def time_jax(X, prior, alpha, n_chains, sweeps, capacity, spec):
    import jax
    import jax.numpy as jnp

    from jaxclust.dpmm import chains
    from jaxclust.dpmm import state as _state
    from jaxclust.dpmm.model import prepare_data

    prepared = prepare_data(X, prior)
    fam = prepared.family.astype(jnp.float32)
    data = _state.prepare(prepared.X, None, fam)
    rng = np.random.default_rng(0)
    z = jnp.asarray(rng.integers(0, 10, (n_chains, len(X))), jnp.int32)
    states = chains._init_states(z, data, fam, jnp.float32(alpha), capacity=capacity)
    states = chains._shard(states, n_chains)
    ap = (jnp.float32(1.0), jnp.float32(1.0), jnp.asarray(False))
    keys = jax.random.split(jax.random.key(0), n_chains)
    t = time.perf_counter()
    out = chains._run_block(
        keys, states, data, fam, ap, jnp.asarray(sweeps), jnp.asarray(0), n_sweeps=sweeps, spec=spec
    )
    jax.block_until_ready(out)
    compile_and_first = time.perf_counter() - t
    states = out[0]
    t = time.perf_counter()
    out = chains._run_block(
        keys, states, data, fam, ap, jnp.asarray(sweeps), jnp.asarray(0), n_sweeps=sweeps, spec=spec
    )
    jax.block_until_ready(out)
    dt = time.perf_counter() - t
    overflow = bool(np.any(np.asarray(out[1].overflow)))
    k_occ = float(np.mean(np.asarray((out[0].counts > 0).sum(-1))))
    return n_chains * len(X) * sweeps / dt, compile_and_first, overflow, k_occ


def time_jax_auto(X, prior, alpha, n_chains, sweeps, spec):
    """Our side as ``DPMM().fit`` runs it: ``run_chains`` with the default capacity policy (no hand-picked
    slots). Returns the rate of the timed call, the warm-up wall time, the final capacity, the growths and
    overflow redos (warm-up + timed), and the mean occupied count."""
    import jax
    import jax.numpy as jnp

    from jaxclust.dpmm import chains
    from jaxclust.dpmm import state as _state
    from jaxclust.dpmm.model import prepare_data

    prepared = prepare_data(X, prior)
    fam = prepared.family.astype(jnp.float32)
    data = _state.prepare(prepared.X, None, fam)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, (n_chains, len(X)))  # the NumPy reference's starting law
    kw = dict(alpha=alpha, alpha_prior=None, n_burnin=0, n_samples=1, thin=sweeps, spec=spec)
    t = time.perf_counter()
    warm = chains.run_chains(jax.random.key(0), data, fam, labels, **kw)
    # a second warm-up from the first one's end compiles the capacity the timed call starts at
    warm2 = chains.run_chains(jax.random.key(2), data, fam, warm.final_labels, **kw)
    warm_s = time.perf_counter() - t
    t = time.perf_counter()
    res = chains.run_chains(jax.random.key(1), data, fam, warm2.final_labels, **kw)
    dt = time.perf_counter() - t
    growths = warm.n_capacity_growths + warm2.n_capacity_growths + res.n_capacity_growths
    redos = warm.n_overflow_redos + warm2.n_overflow_redos + res.n_overflow_redos
    k_occ = float(np.mean(res.n_components))
    return n_chains * len(X) * sweeps / dt, warm_s, res.capacity, growths, redos, k_occ


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--d", type=int, default=35)
    p.add_argument("--chains", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument(
        "--capacity",
        default="auto",
        help="'auto' (default): the estimator's slot policy via run_chains; an int: the block function alone "
        "with that many slots",
    )
    p.add_argument("--sweeps", type=int, default=4)
    p.add_argument(
        "--split-merge",
        type=int,
        default=1,
        help="split-merge rounds per iteration of ours (default 1, as DPMM().fit; 0: the Gibbs sweep alone, "
        "the measurement of the rounds before 2026-11-26)",
    )
    p.add_argument("--numpy-sweeps", type=int, default=2)
    p.add_argument("--no-scale", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None)
    p.add_argument(
        "--host-devices",
        type=int,
        default=None,
        help="split the CPU into this many XLA host devices (chains shard over them, one core each); "
        "must be set before JAX starts, so it only works when this script is what imports JAX",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.d, args.chains, args.sweeps, args.numpy_sweeps = 500, 10, [1, 16], 2, 1
    if args.host_devices:
        flag = f"--xla_force_host_platform_device_count={args.host_devices}"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()

    import jax

    from jaxclust.dpmm import NormalGamma

    results = {
        "machine": f"{platform.processor() or platform.machine()}, jax {jax.__version__}, "
        f"devices {jax.devices()}",
        "runs": [],
    }
    alpha = 1.0
    auto = args.capacity == "auto"
    capacity = None if auto else int(args.capacity)
    spec = kernel(args.split_merge)
    results["split_merge"] = args.split_merge
    summary = []

    def one(n, d, chain_list):
        X = make_data(n, d)
        prior = NormalGamma.from_data(X)
        ref_rate, ref_k = time_numpy(X, prior.check(X), alpha, args.numpy_sweeps)
        print(f"N={n} D={d}: numpy reference {ref_rate:,.0f} point-updates/s (K={ref_k})", flush=True)
        for c in chain_list:
            if auto:
                rate, first, cap, growths, redos, k_occ = time_jax_auto(X, prior, alpha, c, args.sweeps, spec)
                overflow = False
                how = f"auto capacity {cap}, {growths} growths, {redos} overflow redos"
            else:
                rate, first, overflow, k_occ = time_jax(X, prior, alpha, c, args.sweeps, capacity, spec)
                cap, growths, redos = capacity, 0, 0
                how = f"fixed capacity {cap}{', OVERFLOW' if overflow else ''}"
            ratio = rate / ref_rate
            print(
                f"  chains={c:5d}: {rate:,.0f} chain-point-updates/s  ratio {ratio:6.1f}x  "
                f"(compile+first {first:.1f}s, K~{k_occ:.1f}; {how})",
                flush=True,
            )
            summary.append(
                f"SUMMARY N={n} D={d} chains={c} split_merge={args.split_merge}: ours/NumPy = {ratio:.1f}x "
                f"({rate:,.0f} vs {ref_rate:,.0f} point-updates/s; {how}; {jax.device_count()} device(s))"
            )
            results["runs"].append(
                {
                    "n": n,
                    "d": d,
                    "chains": c,
                    "ours_per_s": rate,
                    "numpy_per_s": ref_rate,
                    "ratio": ratio,
                    "capacity_mode": "auto" if auto else "fixed",
                    "capacity": cap,
                    "capacity_growths": growths,
                    "overflow_redos": redos,
                    "k_occupied": k_occ,
                    "overflow": overflow,
                }
            )

    one(args.n, args.d, args.chains)
    if not args.no_scale and not args.quick:
        for n, d in [(500, 35), (8000, 35), (2000, 8), (2000, 100)]:
            one(n, d, [1, 64])
    print(json.dumps(results, indent=1))
    print("\n".join(summary))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
