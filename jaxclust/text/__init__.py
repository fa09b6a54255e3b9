"""Text features: context representations of target-word instances (local features, PPMI space,
second-order compositions, mixed) and dense features of whole texts (TF-IDF -> SVD -> standardised).

Example
-------
>>> from jaxclust.text import LocalFeatures, TextFeaturizer, build_space, context_vectors, mixed
"""

from jaxclust.text.compose import context_vectors, mixed
from jaxclust.text.dsm import DistributionalSpace, build_space, ppmi
from jaxclust.text.featurize import TextFeaturizer, text_fingerprint
from jaxclust.text.local import LocalFeatures, local_feature_dict

__all__ = [
    "DistributionalSpace",
    "LocalFeatures",
    "TextFeaturizer",
    "build_space",
    "context_vectors",
    "local_feature_dict",
    "mixed",
    "ppmi",
    "text_fingerprint",
]
