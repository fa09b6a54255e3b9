"""One process of a multi-process DPMM test (``test_dpmm_distributed.py`` starts several of these).

    JAX_COORDINATOR_ADDRESS=127.0.0.1:P JAX_NUM_PROCESSES=N JAX_PROCESS_ID=I \
        python distributed_worker.py --cases plain,constrained

It joins the job with ``distributed.initialize()`` (settings from the environment, as the README says) and
samples with ``mesh="all"``. Without ``JAX_COORDINATOR_ADDRESS`` it runs alone, without ``jax.distributed``
and without a mesh: the single-process reference.
The last line of stdout is ``RESULT <json>``: per case, the ChainResult's arrays as lists, or, when the run
raised a jaxclust error, ``{"error": class name, "message": ...}``. The test module imports
:func:`make_case` and :func:`run_case` for its in-process references.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

N_ITEMS = 173  # odd: the rows are padded on 2 and on 4 devices


def make_case(name: str):
    """``(X, constraints, sample kwargs)`` of a named case (seeded; the same in every process)."""
    from jaxclust import Constraints

    rng = np.random.default_rng(0)
    centres = np.array([[-3.0, 0.0, 1.0], [0.0, 2.5, -1.0], [3.0, 0.0, 0.5], [0.5, -2.5, 0.0]])
    X = centres[rng.integers(0, 4, N_ITEMS)] + rng.normal(0.0, 0.9, (N_ITEMS, 3))
    kw = dict(n_chains=2, n_burnin=4, n_samples=3, thin=2)
    if name == "plain":  # through the estimator: DPMM(mesh=...).fit
        return X, None, dict(kw, sampler="subcluster")
    if name in ("constrained", "grown"):
        # hard must- and cannot-links and soft answers, between rows that end up on different devices;
        # alpha inferred; "grown": 4 starting slots, so the slots grow while sampling
        answers = [
            (0, 1, "must"),
            (2, 150, "must"),
            (100, 170, "must"),
            (0, 7, "cannot"),
            (10, 160, "cannot"),
            (90, 3, "cannot"),
            (2, 120, "cannot"),
            (5, 140, "must", 0.1),
            (20, 21, "cannot", 0.2),
            (60, 130, "must", 0.3),
        ]
        c = Constraints.from_answers(N_ITEMS, answers)
        kw = dict(kw, sampler="subcluster", alpha_prior=(2.0, 1.0))
        return X, c, dict(kw, capacity=4) if name == "grown" else kw
    if name == "collapsed":
        # 3 chains: padded to 4 on 2 devices
        c = Constraints(40, must_link=[(0, 1)], cannot_link=[(0, 7), (2, 30)])
        return X[:40], c, dict(n_chains=3, n_burnin=2, n_samples=2, thin=2, sampler="collapsed")
    raise ValueError(f"unknown case {name!r}")


def run_case(name: str, mesh=None, seed: int = 5, perturb: bool = False) -> dict:
    from jaxclust import DPMM
    from jaxclust.dpmm import sample
    from jaxclust.errors import JaxclustError

    X, c, kw = make_case(name)
    if perturb:
        X = X.copy()
        X[3, 1] += 1.0
    try:
        if name == "plain":
            m = DPMM(random_state=seed, mesh=mesh, **kw).fit(X, c)
            return {
                "samples": m.samples_.tolist(),
                "labels": m.labels_.tolist(),
                "log_joint": m.log_joint_.tolist(),
                "alpha": m.alpha_samples_.tolist(),
                "final_labels": m.final_labels_.tolist(),
                "capacity": m.capacity_,
                "n_capacity_growths": m.n_capacity_growths_,
                "n_overflow_redos": m.n_overflow_redos_,
            }
        res = sample(seed, X, c, mesh=mesh, **kw)
    except JaxclustError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return {k: np.asarray(v).tolist() for k, v in res._asdict().items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True)
    parser.add_argument("--subsample", type=int, default=0, help="splitmerge.SUBSAMPLE for this run")
    parser.add_argument("--perturb-on", type=int, default=-1, help="this process id changes one value of X")
    args = parser.parse_args()
    t0 = time.perf_counter()

    from jaxclust.dpmm import distributed, splitmerge

    mesh = None
    if "JAX_COORDINATOR_ADDRESS" in os.environ:
        distributed.initialize(timeout=60)
        mesh = "all"
    if args.subsample:
        splitmerge.SUBSAMPLE = args.subsample
        splitmerge.SUBSAMPLE_PER_SLOT = 0
    import jax

    out = {"process": jax.process_index(), "processes": jax.process_count(), "devices": jax.device_count()}
    out["seconds"] = {"start": round(time.perf_counter() - t0, 2)}
    for name in args.cases.split(","):
        t = time.perf_counter()
        out[name] = run_case(name, mesh, perturb=args.perturb_on == jax.process_index())
        out["seconds"][name] = round(time.perf_counter() - t, 2)
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
