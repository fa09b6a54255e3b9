"""The DPMM's collapsed iteration as a NumPyro ``MCMCKernel`` (a thin adapter over
:func:`jaxclust.dpmm.kernels.build_kernel`, with the fit's preparation of :mod:`jaxclust.dpmm.problem`).

Example::

    from numpyro.infer import MCMC
    kernel = DPMMKernel(X, constraints, alpha_prior=(1.0, 1.0))
    mcmc = MCMC(kernel, num_warmup=100, num_samples=200, num_chains=8, chain_method="vectorized")
    mcmc.run(jax.random.key(0))
    mcmc.print_summary()                       # K, alpha, log joint: R-hat and ESS per site
    z = mcmc.get_extra_fields()["z"]           # (chains * draws, n) item labels (slot ids)

The capacity is fixed inside NumPyro's loop (default: the number of must-link groups, which can never
overflow);
:func:`jaxclust.dpmm.sample` is the driver that grows capacity on demand.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer.mcmc import MCMCKernel
from numpyro.util import is_prng_key

from jaxclust.constraints import as_constraints
from jaxclust.dpmm import state as _state
from jaxclust.dpmm.alpha import check_alpha_prior
from jaxclust.dpmm.kernels import build_kernel
from jaxclust.dpmm.problem import prepare_problem, start_labels
from jaxclust.validation import check_array, check_int, check_positive

__all__ = ["DPMMKernel", "DPMMKernelState"]


class DPMMKernelState(NamedTuple):
    """``draws``: dict of label-invariant scalars (``n_components``, ``alpha``, ``log_joint``); ``z``: (n,)
    item
    slot labels; ``gibbs``: the sampler state; ``rng_key``."""

    draws: dict
    z: jax.Array
    gibbs: _state.GibbsState
    rng_key: jax.Array


class DPMMKernel(MCMCKernel):
    """Collapsed Gibbs with split-merge for the constrained DPMM, one NumPyro step = one iteration.

    Parameters
    ----------
    X : array-like, shape (n, D)
    constraints, prior, alpha, alpha_prior : as in :func:`jaxclust.dpmm.sample`
    capacity : int, optional
        Component slots (default: number of must-link groups, always enough).
    split_merge : int
        Split-merge rounds before each Gibbs sweep (:mod:`jaxclust.dpmm.splitmerge`).
    """

    sample_field = "draws"

    def __init__(
        self,
        X,
        constraints=None,
        prior=None,
        alpha: float = 1.0,
        alpha_prior=None,
        capacity: int | None = None,
        dtype=jnp.float32,
        split_merge: int = 1,
    ):
        X = check_array(X, name="X", min_rows=2)
        constraints = as_constraints(constraints, X.shape[0])
        problem = prepare_problem(
            X,
            constraints,
            prior,
            sampler="collapsed",
            split_merge=check_int(split_merge, "split_merge", minimum=0),
            dtype=dtype,
        )
        self._family, self._data = problem.family, problem.data
        self._constraints = constraints
        self._alpha = check_positive(alpha, "alpha")
        self._alpha_prior = _state.alpha_prior_arrays(check_alpha_prior(alpha_prior), dtype)
        n_groups = X.shape[0] if constraints is None else constraints.n_groups
        self._capacity = n_groups if capacity is None else check_int(capacity, "capacity", minimum=1)
        self._sample_fn = None
        self._kernel = build_kernel(problem.spec, self._family, self._alpha_prior)

    @property
    def default_fields(self):
        return ("draws", "z")

    def _wrap(self, gstate: _state.GibbsState, key) -> DPMMKernelState:
        draws = {
            "n_components": jnp.sum(gstate.counts > 0),
            "alpha": gstate.alpha,
            "log_joint": gstate.log_joint,
        }
        return DPMMKernelState(draws, gstate.z[self._data.group_of], gstate, key)

    def _step_one(self, state: DPMMKernelState) -> DPMMKernelState:
        key, sub = jax.random.split(state.rng_key)
        new, _ = self._kernel(sub, state.gibbs, self._data)
        return self._wrap(new, key)

    def init(self, rng_key, num_warmup, init_params, model_args=(), model_kwargs=None):
        del num_warmup, init_params, model_args, model_kwargs
        keys = rng_key if not is_prng_key(rng_key) else rng_key[None]
        # every chain starts in one component (repaired on the host to satisfy the cannot-links)
        n_rows = self._data.valid.shape[0]
        z = start_labels(
            np.zeros((len(keys), self._data.group_of.shape[0]), np.int64), self._constraints, n_rows
        )
        self._capacity = max(self._capacity, int(z.max()) + 1)
        init_fn = jax.vmap(lambda zz: _state.init(zz, self._data, self._family, self._alpha, self._capacity))
        states = jax.vmap(self._wrap)(init_fn(jnp.asarray(z)), keys)
        if is_prng_key(rng_key):
            self._sample_fn = self._step_one
            return jax.tree.map(lambda a: a[0], states)
        self._sample_fn = jax.vmap(self._step_one)  # chain_method="vectorized": one call for all chains
        return states

    def sample(self, state: DPMMKernelState, model_args: Any, model_kwargs: Any) -> DPMMKernelState:
        return self._sample_fn(state)

    def get_diagnostics_str(self, state: DPMMKernelState) -> str:
        return f"K={int(state.draws['n_components'])} alpha={float(state.draws['alpha']):.3g}"
