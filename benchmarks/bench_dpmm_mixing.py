"""Benchmark: does ``DPMM().fit`` find the posterior, how fast, against what a user would use instead.

The peer is scikit-learn's variational DP mixture, ``BayesianGaussianMixture(weight_concentration_prior_type=
"dirichlet_process")`` (``covariance_type="diag"``, or ``"full"`` for full-covariance data; ``n_components`` twice
the true number, ``max_iter=500``, ``random_state=0``), timed in the same process on the same data.

Parts (``--part``, default all):

* ``mixing``: separated Gaussian clusters (20 blobs in 32 dimensions; unequal sizes; full-covariance clusters;
  20 blobs at D = 2, 8, 32, 128). For our defaults (``sampler="auto"``) and the other sampler: ARI against the
  truth, components found, the best sample's log joint minus the true partition's (positive: above it), the
  first iteration at which some chain is within 5 nats of the truth, and wall time (first fit in the process,
  compile included, and a second identical fit).
* ``speed``: N = 20,000, D = 32, 20 blobs: ``DPMM().fit`` and the peer in a fresh subprocess; our first call
  (compile included: what a notebook user feels) and second call, each as a ratio to the peer's time; the
  first call's JAX compile events (``first_call_compile_events``: programs traced, lowered and compiled, with
  their seconds).
* ``scale``: N = 200,000, D = 128, 20 components, 200 iterations of the sub-cluster sampler, one chain, in a
  fresh subprocess, timed on the first call (compilation included) and on a second identical call
  (DPMMSubClusters, the reference implementation of this kind of sampler, reports 481 s for this workload in
  one process; it is not run here).
* ``n``: time per iteration (second call, compiled) and peak memory (max RSS of a fresh subprocess) of the
  sub-cluster sampler at N = 10^4, 10^5, 10^6, D = 16, 20 components, 50 iterations.

Usage::

    python benchmarks/bench_dpmm_mixing.py                  # everything (about 10 minutes on 2 cores)
    python benchmarks/bench_dpmm_mixing.py --part speed
    python benchmarks/bench_dpmm_mixing.py --quick          # smaller sizes, a smoke run

Prints a table per part and writes JSON with ``--out FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np

TOL = 5.0  # nats: "reached the true partition's log joint"


def blobs(n, d, k, std, seed, sizes=None):
    from sklearn.datasets import make_blobs

    if sizes is not None:
        X, y = make_blobs(
            n_samples=sizes, n_features=d, cluster_std=std, random_state=seed, center_box=(-10, 10)
        )
    else:
        X, y = make_blobs(n_samples=n, n_features=d, centers=k, cluster_std=std, random_state=seed)
    return (X - X.mean(0)) / X.std(0), y


def full_cov(n_per, k, d, seed):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for c in range(k):
        A = rng.normal(size=(d, d))
        cov = A @ A.T / d + np.diag([2.0] + [0.05] * (d - 1))
        X.append(rng.multivariate_normal(rng.uniform(-12, 12, d), cov, size=n_per))
        y += [c] * n_per
    X = np.concatenate(X)
    return (X - X.mean(0)) / X.std(0), np.array(y)


def truth_log_joint(X, y, prior):
    from jaxclust.dpmm import sample

    res = sample(0, X, None, prior, init_labels=y, n_chains=1, n_burnin=0, n_samples=1, thin=1, split_merge=0)
    return float(res.log_joint.max())


def peer(X, k_true, cov="diag"):
    from sklearn.mixture import BayesianGaussianMixture

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = BayesianGaussianMixture(
            n_components=2 * k_true,
            weight_concentration_prior_type="dirichlet_process",
            covariance_type=cov,
            max_iter=500,
            random_state=0,
        ).fit(X)
    dt = time.perf_counter() - t
    return m.predict(X), dt


def ours(X, sampler, prior):
    from jaxclust import DPMM

    times = []
    for _ in range(2):
        t = time.perf_counter()
        m = DPMM(prior=prior, sampler=sampler, random_state=0).fit(X)
        times.append(time.perf_counter() - t)
    return m, times


def part_mixing(quick: bool) -> list[dict]:
    from sklearn.metrics import adjusted_rand_score as ari

    from jaxclust.dpmm import NormalInverseWishart
    from jaxclust.dpmm.model import choose_sampler

    n = 600 if quick else 2000
    cases = [
        ("20 blobs, D=32", *blobs(n, 32, 20, 2.0, 0), None, "diag"),
        ("unequal sizes", *blobs(None, 8, None, 1.0, 3, sizes=[800, 300, 100, 40, 12, 6]), None, "diag"),
    ]
    Xf, yf = full_cov(60 if quick else 200, 8, 4, 5)
    cases.append(("full covariance, D=4", Xf, yf, NormalInverseWishart.from_data(Xf), "full"))
    for d in (2, 8, 128):
        cases.append((f"20 blobs, D={d}", *blobs(n, d, 20, 2.0 if d > 2 else 0.5, 1), None, "diag"))
    rows = []
    for name, X, y, prior, cov in cases:
        k = len(np.unique(y))
        truth = truth_log_joint(X, y, prior)
        labels, t_peer = peer(X, k, cov)
        row = {"case": name, "n": len(X), "d": X.shape[1], "k": k, "peer_ari": ari(y, labels)}
        row.update(peer_k=int(len(np.unique(labels))), peer_seconds=t_peer)
        auto = choose_sampler("auto", len(X), X.shape[1])
        for sampler in (auto, "subcluster" if auto == "collapsed" else "collapsed"):
            m, times = ours(X, sampler, prior)
            trace = m.diagnostics_["traces"]["log_joint"].max(axis=0)
            hit = np.flatnonzero(trace >= truth - TOL)
            row[sampler] = {
                "default": sampler == auto,
                "ari": ari(y, m.labels_),
                "k": m.n_components_,
                "lj_minus_truth": float(m.log_joint_.max() - truth),
                "first_iteration_within_5_nats": int(hit[0]) + 1 if len(hit) else None,
                "iterations": int(trace.shape[0]),
                "seconds_first_fit": times[0],
                "seconds_second_fit": times[1],
                "settings": m.settings_,
            }
        rows.append(row)
        print(json.dumps(row))
    return rows


SPEED = """
import json, time, warnings, numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score as ari
from sklearn.mixture import BayesianGaussianMixture
X, y = make_blobs(n_samples={n}, n_features=32, centers=20, cluster_std=2.0, random_state=0)
X = (X - X.mean(0)) / X.std(0)
t = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    b = BayesianGaussianMixture(n_components=40, weight_concentration_prior_type="dirichlet_process",
                                covariance_type="diag", max_iter=500, random_state=0).fit(X)
t_peer = time.perf_counter() - t
t0 = time.perf_counter()
from jaxclust import DPMM  # imported before timing, as the peer is (jaxclust.dpmm imports JAX: about 1.5 s)
t_import = time.perf_counter() - t0
import jax
events = {{}}  # JAX's compile events of the first call: count and seconds of tracing, lowering, compiling
def on_event(event, seconds, **kwargs):
    if event.startswith("/jax/core/compile/"):
        c = events.setdefault(event.rsplit("/", 1)[-1], [0, 0.0]); c[0] += 1; c[1] += seconds
jax.monitoring.register_event_duration_secs_listener(on_event)
t0 = time.perf_counter()
m = DPMM(random_state=0).fit(X)
t_first = time.perf_counter() - t0
first_call_events = {{k: [v[0], round(v[1], 3)] for k, v in events.items()}}
t = time.perf_counter()
m = DPMM(random_state=0).fit(X)
t_second = time.perf_counter() - t
print(json.dumps(dict(n={n}, peer_seconds=t_peer, peer_ari=ari(y, b.predict(X)), import_seconds=t_import,
                      first_call_seconds=t_first, first_call_compile_events=first_call_events,
                      second_call_seconds=t_second, ari=ari(y, m.labels_), k=m.n_components_,
                      settings=m.settings_, first_ratio=t_first / t_peer, second_ratio=t_second / t_peer)))
"""

SCALE = """
import json, resource, time, numpy as np, jax, jax.numpy as jnp
from jaxclust.dpmm import sample
rng = np.random.default_rng(0)
n, d, k, iters = {n}, {d}, 20, {iters}
centres = rng.normal(0, 4.0, (k, d))
y = rng.integers(0, k, n)
X = (centres[y] + rng.normal(size=(n, d))).astype(np.float32)
t = time.perf_counter()
res = sample(0, X, n_chains=1, n_burnin=iters - 1, n_samples=1, thin=1, sampler="subcluster")
first = time.perf_counter() - t
t = time.perf_counter()
res = sample(0, X, n_chains=1, n_burnin=iters - 1, n_samples=1, thin=1, sampler="subcluster")
dt = time.perf_counter() - t
from sklearn.metrics import adjusted_rand_score as ari
print(json.dumps(dict(n=n, d=d, iterations=iters, seconds_first_call=first, seconds=dt,
                      seconds_per_iteration=dt / iters,
                      ari=ari(y, res.samples[0, -1]), k=int(res.n_components[0, -1]),
                      growths=res.n_capacity_growths, capacity=res.capacity,
                      peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""


def _subprocess(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def part_speed(quick: bool) -> dict:
    row = _subprocess(SPEED.format(n=5000 if quick else 20000))
    print(json.dumps(row))
    return row


def part_scale(quick: bool) -> dict:
    row = _subprocess(SCALE.format(n=20000 if quick else 200000, d=128, iters=20 if quick else 200))
    print(json.dumps(row))
    return row


def part_n(quick: bool) -> list[dict]:
    rows = []
    for n in (10_000, 100_000) if quick else (10_000, 100_000, 1_000_000):
        row = _subprocess(SCALE.format(n=n, d=16, iters=50))
        print(json.dumps(row))
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["all", "mixing", "speed", "scale", "n"], default="all")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import jax

    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "jax": jax.__version__,
        "device": str(jax.devices()[0]),
        "load_average": os.getloadavg(),
    }
    print(json.dumps(meta))
    out = {"meta": meta}
    parts = ["mixing", "speed", "scale", "n"] if args.part == "all" else [args.part]
    for p in parts:
        out[p] = {"mixing": part_mixing, "speed": part_speed, "scale": part_scale, "n": part_n}[p](args.quick)
    out["meta"]["load_average_end"] = os.getloadavg()
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
