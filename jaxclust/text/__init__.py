"""Context representations of target-word instances: local features, PPMI space, second-order compositions,
mixed.

Example
-------
>>> from jaxclust.text import LocalFeatures, build_space, context_vectors, mixed
"""

from jaxclust.text.compose import context_vectors, mixed
from jaxclust.text.dsm import DistributionalSpace, build_space, ppmi
from jaxclust.text.local import LocalFeatures, local_feature_dict

__all__ = [
    "DistributionalSpace",
    "LocalFeatures",
    "build_space",
    "context_vectors",
    "local_feature_dict",
    "mixed",
    "ppmi",
]
