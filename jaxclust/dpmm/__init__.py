"""Constrained Dirichlet process mixture: collapsed Gibbs in pure JAX, many chains (Vlachos et al. 2010, §2).

Estimator::

    from jaxclust import DPMM, Constraints
    model = DPMM(alpha_prior=(1.0, 1.0)).fit(X, Constraints(len(X), must_link=[(0, 1)], cannot_link=[(0, 2)]))
    model.labels_, model.coclustering_, model.diagnostics_["log_joint"]["r_hat"]

``NestedDPMM`` is the two-level mixture, classes of components (:mod:`jaxclust.dpmm.nested`): answers act on
classes, so a class may be several Gaussian shapes.

Functional API: :func:`sample` (validation + chains), or the pieces: :func:`prepare` (host packing) and
:func:`init` (:mod:`jaxclust.dpmm.state`), :func:`build_kernel` (one jittable iteration of either sampler,
``kernel(key, state, data) -> (state, info)``; :func:`sweep` is its collapsed Gibbs move), :func:`run_chains`.
"""

from jaxclust.dpmm.alpha import escobar_west
from jaxclust.dpmm.chains import ChainResult, repair_labels, run_chains
from jaxclust.dpmm.dirichlet_multinomial import DirichletMultinomial
from jaxclust.dpmm.families import Family, NormalGamma, default_prior
from jaxclust.dpmm.gibbs import sweep
from jaxclust.dpmm.kernels import Kernel, build_kernel
from jaxclust.dpmm.model import DPMM, as_constraints, coclustering, sample
from jaxclust.dpmm.nested_model import NestedDPMM
from jaxclust.dpmm.normal_inverse_wishart import NormalInverseWishart
from jaxclust.dpmm.state import GibbsState, GroupData, MoveInfo, init, log_joint, prepare

__all__ = [
    "DPMM",
    "NestedDPMM",
    "sample",
    "coclustering",
    "as_constraints",
    "NormalGamma",
    "NormalInverseWishart",
    "DirichletMultinomial",
    "Family",
    "default_prior",
    "GibbsState",
    "GroupData",
    "MoveInfo",
    "Kernel",
    "prepare",
    "init",
    "sweep",
    "build_kernel",
    "log_joint",
    "run_chains",
    "ChainResult",
    "repair_labels",
    "escobar_west",
    "DPMMKernel",
]


def __getattr__(name):
    if name == "DPMMKernel":  # numpyro adapter, imported on demand
        from jaxclust.dpmm.numpyro_kernel import DPMMKernel

        return DPMMKernel
    raise AttributeError(f"module 'jaxclust.dpmm' has no attribute {name!r}")
