"""jaxclust: clustering with a little supervision, in JAX.

Constrained Dirichlet-process mixtures with active constraint selection, the latent left-linking model (L3M) for
online clustering, k-means/EM baselines, and iterative constrained clustering (ICC) with metric learning.

Top-level names are imported lazily (PEP 562) so that ``import jaxclust`` stays fast and importing one part never
pulls in another's dependencies.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it
_LAZY: dict[str, str] = {
    "Constraints": "jaxclust.constraints",
    "DPMM": "jaxclust.dpmm",
    "NestedDPMM": "jaxclust.dpmm",
    "ActiveLearner": "jaxclust.active",
    "GoldOracle": "jaxclust.active",
    "NoisyOracle": "jaxclust.active",
    "InteractiveOracle": "jaxclust.active",
    "L3M": "jaxclust.l3m",
    "KMeans": "jaxclust.kmeans",
    "COPKMeans": "jaxclust.kmeans",
    "PCKMeans": "jaxclust.kmeans",
    "GaussianMixture": "jaxclust.kmeans",
    "ITML": "jaxclust.icc",
    "ConstrainedAgglomerative": "jaxclust.icc",
    "ICC": "jaxclust.icc",
    "enable_compilation_cache": "jaxclust.compilation_cache",
}
_SUBMODULES = (
    "active",
    "compilation_cache",
    "constraints",
    "datasets",
    "dpmm",
    "errors",
    "icc",
    "kmeans",
    "l3m",
    "metrics",
    "text",
    "validation",
)

__all__ = sorted(_LAZY) + list(_SUBMODULES) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"jaxclust.{name}")
    raise AttributeError(f"module 'jaxclust' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
