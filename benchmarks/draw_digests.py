"""Digests of the DPMM's draws for fixed seeds: a refactor that promises the same draws keeps every line equal.

Both samplers, with no constraints, hard ones, soft answers and a hub (spill rows), alpha fixed and inferred, a
capacity that must grow, no and two split-merge rounds, and NumPyro's loop; each line is a digest of the samples,
log joints, alpha, traces, final labels and move counts, with the capacity, growths and redos. Run it on two
checkouts and compare (about a minute on a 2-core CPU)::

    python benchmarks/draw_digests.py before.json      # on the old checkout
    python benchmarks/draw_digests.py after.json       # on the new one
    diff before.json after.json && echo "same draws"
"""

import hashlib
import json
import sys

import jax
import numpy as np
from numpyro.infer import MCMC

from jaxclust import Constraints
from jaxclust.dpmm import DPMMKernel, sample

rng = np.random.default_rng(0)
X = np.concatenate([rng.normal(c, 0.5, (30, 3)) for c in (-3, 0, 3)])
n = len(X)
hard = Constraints(n, must_link=[(0, 1), (2, 3), (40, 41)], cannot_link=[(0, 35), (40, 70), (5, 80)])
soft = hard.with_answer(10, 11, "must", error_rate=0.1).with_answer(12, 50, "cannot", error_rate=0.2)
many = Constraints(n, cannot_link=[(0, j) for j in range(30, 60)])  # spill rows (hub)
out = {}


def dig(r):
    h = hashlib.sha256()
    for a in (r.samples, r.log_joint, r.alpha, r.trace_log_joint, r.final_labels, r.split_merge):
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()[:16] + f" cap={r.capacity} g={r.n_capacity_growths} r={r.n_overflow_redos}"


for sampler in ("collapsed", "subcluster"):
    for name, c in (("none", None), ("hard", hard), ("soft", soft), ("hub", many)):
        for ap in (None, (1.0, 1.0)):
            r = sample(3, X, c, sampler=sampler, alpha_prior=ap, n_chains=3, n_burnin=6, n_samples=4, thin=2)
            out[f"{sampler}/{name}/{ap}"] = dig(r)
r = sample(5, X, hard, sampler="collapsed", capacity=2, n_chains=2, n_burnin=4, n_samples=3, thin=2)
out["grow"] = dig(r)
r = sample(5, X, hard, sampler="subcluster", capacity=2, n_chains=2, n_burnin=4, n_samples=3, thin=2)
out["grow-sub"] = dig(r)
r = sample(7, X, soft, sampler="collapsed", split_merge=0, n_chains=2, n_burnin=4, n_samples=3, thin=2)
out["nosm"] = dig(r)
r = sample(7, X, soft, sampler="collapsed", split_merge=2, n_chains=2, n_burnin=4, n_samples=3, thin=2)
out["sm2"] = dig(r)
k = DPMMKernel(X[:20], Constraints(20, cannot_link=[(0, 3)]), alpha_prior=(1.0, 1.0))
m = MCMC(k, num_warmup=3, num_samples=4, num_chains=2, chain_method="vectorized", progress_bar=False)
m.run(jax.random.key(0))
out["numpyro"] = hashlib.sha256(np.asarray(m.get_extra_fields()["z"]).tobytes()).hexdigest()[:16]
with open(sys.argv[1] if len(sys.argv) > 1 else "draw_digests.json", "w") as f:
    json.dump(out, f, indent=1)
print(json.dumps(out, indent=1))
