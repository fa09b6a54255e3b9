"""What a fit prepares once, shared by :class:`jaxclust.DPMM`, :func:`jaxclust.dpmm.sample` and the NumPyro
kernel: the data and prior in the sampler's units (:func:`prepare_data`), the packed group data, the iteration
(:func:`prepare_problem`), and the chains' starting group labels (:func:`start_labels`).

Usage::

    problem = prepare_problem(X, constraints, prior, sampler="collapsed")
    z0 = start_labels(np.zeros((n_chains, n)), constraints, n)     # (n_chains, n rows) group labels
    result = run_chains(key, problem.data, problem.family, z0, alpha=1.0, spec=problem.spec)
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxclust.dpmm import chains, distributed
from jaxclust.dpmm import state as _state
from jaxclust.dpmm.dirichlet_multinomial import DirichletMultinomial
from jaxclust.dpmm.families import NormalGamma
from jaxclust.dpmm.kernels import Kernel
from jaxclust.dpmm.normal_inverse_wishart import NormalInverseWishart
from jaxclust.errors import InvalidInputError, JaxclustWarning

__all__ = ["PreparedData", "prepare_data", "location_scale", "Problem", "prepare_problem", "start_labels"]

_FAMILIES = (NormalGamma, NormalInverseWishart, DirichletMultinomial)


class PreparedData(NamedTuple):
    """What the sampler sees. ``family``: the prior in the sampler's units; ``X``: (n, D') data in those
    units; ``log_jacobian``: the constant that turns log densities back into the user's units; ``columns``:
    (D',) the user's columns that are modelled."""

    family: Any
    X: np.ndarray
    log_jacobian: float
    columns: np.ndarray


def location_scale(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and powers of two near the column standard deviations (1 for a constant column),
    computed without overflow for any finite float64 data."""
    top = np.max(np.abs(X), axis=0)
    big = np.exp2(np.ceil(np.log2(np.where(top > 0, top, 1.0))))  # exact power of two >= |x|
    shift = (X / big).mean(axis=0) * big
    dev = (X - shift) / big
    std = np.sqrt((dev**2).mean(axis=0)) * big
    scale = np.exp2(np.round(np.log2(np.where(std > 0, std, 1.0))))
    return shift, scale


def prepare_data(X: np.ndarray, prior) -> PreparedData:
    """The prior and data as the sampler sees them: the same model in better-conditioned units.

    Gaussian families run on ``(x - column mean) / s_d`` with ``s_d`` a power of two near column d's
    standard deviation (exact in floating point): float32 sampling then works for data of any magnitude, and
    an explicit prior is mapped with the data (:meth:`NormalGamma.transformed`), so the law is unchanged;
    log joints are reported in the user's units (``log_jacobian = -n sum_d ln s_d``). With ``prior=None``
    the default prior is :meth:`NormalGamma.from_data` of the data, and columns with zero variance are left
    out with a warning that names them: a constant column carries no information about the clustering, and
    under any data-driven prior scale it would pull every point into one component. An explicit prior uses
    every column as given. Count data (:class:`DirichletMultinomial`) is used as given.
    """
    if prior is not None and not isinstance(prior, _FAMILIES):
        raise InvalidInputError(
            f"prior: expected None, NormalGamma, NormalInverseWishart or DirichletMultinomial, "
            f"got {type(prior).__name__}"
        )
    columns = np.arange(X.shape[1])
    if prior is not None and not prior.centred:
        return PreparedData(prior.check(X), X, 0.0, columns)
    if prior is None:
        constant = np.all(X == X[:1], axis=0)
        if constant.all():
            raise InvalidInputError("X: every column is constant; there is nothing to cluster")
        if constant.any():
            warnings.warn(
                f"X: columns {np.flatnonzero(constant).tolist()} are constant and are left out of the DPMM "
                "(the default prior cannot use them; pass an explicit prior to model every column as given)",
                JaxclustWarning,
                stacklevel=3,
            )
            columns = np.flatnonzero(~constant)
            X = X[:, columns]
        prior_checked = None
    else:
        prior_checked = prior.check(X)
    shift, scale = location_scale(X)
    Xs = (X - shift) / scale
    if prior_checked is None:
        family = NormalGamma.from_data(Xs)
    else:
        family = prior_checked.transformed(shift, scale)
        try:
            family = family.check(Xs)
        except InvalidInputError as exc:  # the prior was valid as given: its image under the scaling is not
            raise InvalidInputError(
                f"{exc.args[0]} once X (values up to {float(np.max(np.abs(X))):.3g}) is brought to unit scale; "
                "rescale X and the prior together"
            ) from None
    return PreparedData(family.check(Xs), Xs, float(-X.shape[0] * np.sum(np.log(scale))), columns)


class Problem(NamedTuple):
    """One fit's sampler inputs: ``family`` (the prior in the sampler's units, at the fit's dtype), ``data``
    (:class:`jaxclust.dpmm.state.GroupData`), ``spec`` (the iteration, :class:`jaxclust.dpmm.kernels.Kernel`)
    and ``prepared`` (:class:`PreparedData`)."""

    family: Any
    data: _state.GroupData
    spec: Kernel
    prepared: PreparedData


def prepare_problem(
    X: np.ndarray,
    constraints,
    prior,
    *,
    sampler: str,
    split_merge: int = 1,
    dtype=jnp.float32,
    partner_capacity: int | None = None,
    mesh=None,
) -> Problem:
    """The :class:`Problem` of a fit of checked ``X`` (n, D) under checked ``constraints`` with ``sampler``
    ("collapsed" or "subcluster", already resolved). ``mesh`` (resolved): with the sub-cluster sampler the rows
    are packed to split over it (:func:`jaxclust.dpmm.distributed.shard_data`)."""
    prepared = prepare_data(X, prior)
    family = prepared.family.astype(dtype)
    if mesh is not None and sampler == "subcluster":
        data = distributed.shard_data(
            prepared.X, constraints, family, mesh, dtype, partner_capacity, prepared.log_jacobian
        )
    else:
        data = _state.prepare(
            prepared.X,
            constraints,
            family,
            dtype,
            partner_capacity,
            prepared.log_jacobian,
            sampler == "subcluster",
        )
    # the colour loop is the parallel sampler's only; a fixed flag keeps the collapsed compile across rounds
    constrained = sampler == "subcluster" and constraints is not None and constraints.max_partner_degree > 0
    return Problem(family, data, Kernel(sampler, split_merge=split_merge, constrained=constrained), prepared)


def start_labels(item_labels: np.ndarray, constraints, n_rows: int) -> np.ndarray:
    """Group labels (C, n_rows) int32 from item labels (C, n), each chain's repaired to satisfy
    ``constraints`` (:func:`jaxclust.dpmm.chains.repair_labels`); rows past the groups are 0."""
    item_labels = np.asarray(item_labels)
    out = np.zeros((item_labels.shape[0], n_rows), dtype=np.int32)
    for c, row in enumerate(item_labels):
        g = chains.repair_labels(row, constraints)
        out[c, : len(g)] = g
    return out
