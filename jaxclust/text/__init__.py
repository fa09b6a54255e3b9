"""Text features: context representations of target-word instances (local features, PPMI space,
second-order compositions, mixed) and dense features of whole texts: by meaning (WordLlama embeddings, a local
sentence-transformers model or the user's own ``.npy``; :func:`text_featurizer` picks) or by shared words (TF-IDF
-> SVD -> standardised).

Example
-------
>>> from jaxclust.text import LocalFeatures, TextEmbedder, TextFeaturizer, build_space, context_vectors, mixed
"""

from jaxclust.text.compose import context_vectors, mixed
from jaxclust.text.dsm import DistributionalSpace, build_space, ppmi
from jaxclust.text.embed import (
    PrecomputedEmbeddings,
    SentenceTransformerEmbedder,
    TextEmbedder,
    text_featurizer,
)
from jaxclust.text.featurize import TextFeaturizer, text_fingerprint
from jaxclust.text.local import LocalFeatures, local_feature_dict

__all__ = [
    "DistributionalSpace",
    "LocalFeatures",
    "PrecomputedEmbeddings",
    "SentenceTransformerEmbedder",
    "TextEmbedder",
    "TextFeaturizer",
    "build_space",
    "context_vectors",
    "local_feature_dict",
    "mixed",
    "ppmi",
    "text_featurizer",
    "text_fingerprint",
]
