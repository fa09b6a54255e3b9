"""Iterative constrained clustering (ICC) with ITML metric learning and Klein et al.'s constrained complete
link.

Example
-------
>>> from jaxclust.icc import ICC, ITML, ConstrainedAgglomerative
"""

from jaxclust.icc.agglomerative import (
    ConstrainedAgglomerative,
    constrained_complete_link,
    klein_active_queries,
)
from jaxclust.icc.itml import ITML
from jaxclust.icc.loop import ICC, propagate_labels, prototypes
from jaxclust.icc.silhouette import silh_const, silh_const_scores, silh_const_weights

__all__ = [
    "ICC",
    "ITML",
    "ConstrainedAgglomerative",
    "constrained_complete_link",
    "klein_active_queries",
    "propagate_labels",
    "prototypes",
    "silh_const",
    "silh_const_scores",
    "silh_const_weights",
]
