"""Features for texts that need no download: TF-IDF, then truncated SVD (latent semantic analysis), then
standardised columns.

:class:`TextFeaturizer` is a scikit-learn transformer (``fit``, ``transform``, ``fit_transform``,
``get_params``) whose output any jaxclust estimator takes, e.g. the DPMM of an active-learning session::

    X = TextFeaturizer().fit_transform(texts)        # (n_texts, n_components_) float64
    ActiveLearner(DPMM(), oracle).run(X, n_queries=50)

The default, step by step:

1. ``TfidfVectorizer(lowercase=True, strip_accents="unicode", sublinear_tf=True, min_df=1,
   max_features=20000)``: words of two or more letters or digits, any language that separates words with
   spaces; no stop-word list (frequent words get a low idf anyway).
2. ``TruncatedSVD(n_components_, algorithm="randomized", n_iter=7, random_state=0)`` with
   ``n_components_ = min(n_components, ceil(sqrt(n_texts)), n_texts - 1, n_words - 1)`` dimensions
   (``n_components=100`` by default): 6 for 32 texts, 32 for 1,000, 100 from 9,801 texts on. A small
   collection gets few dimensions because the later SVD dimensions of a few texts are mostly noise, and step 3
   would give that noise the same weight as the topics.
3. ``StandardScaler()``: every SVD dimension to mean 0 and variance 1, so that no single dimension sets the
   scale of the clustering model's prior. A dimension that is constant over the texts stays constant (all 0);
   the DPMM leaves such columns out with a warning.

The seed is fixed (``random_state=0``), so one machine gives the same features for the same texts every time;
another machine or scikit-learn version may give slightly different numbers, which is why ``jaxclust
annotate`` saves the features with its answer store.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import StandardScaler

from jaxclust.errors import InvalidInputError, InvalidInputTypeError, NotFittedError
from jaxclust.validation import check_int

__all__ = ["TextFeaturizer", "check_texts", "text_fingerprint", "DEFAULT_N_COMPONENTS"]

#: The most SVD dimensions :class:`TextFeaturizer` keeps by default.
DEFAULT_N_COMPONENTS = 100


def check_texts(texts, name: str = "texts", min_texts: int = 2) -> list[str]:
    """``texts`` as a list of str (``InvalidInputTypeError`` naming the first non-string, ``InvalidInputError``
    when there are fewer than ``min_texts``)."""
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence | np.ndarray):
        raise InvalidInputTypeError(f"{name}: expected a list of strings, got {type(texts).__name__}")
    out = []
    for k, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInputTypeError(f"{name}: item {k} is a {type(t).__name__}, not a string: {t!r}")
        out.append(t)
    if len(out) < min_texts:
        raise InvalidInputError(f"{name}: expected at least {min_texts} texts, got {len(out)}")
    return out


def text_fingerprint(texts: Sequence[str]) -> str:
    """Short SHA-256 of the texts in order (an answer store keeps it to refuse resuming on other texts)."""
    return hashlib.sha256(json.dumps(list(texts), ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


class TextFeaturizer(TransformerMixin, BaseEstimator):
    """TF-IDF -> truncated SVD -> standardised: dense features for a list of texts (see the module docstring).

    Parameters
    ----------
    n_components : int
        The most SVD dimensions; the fit keeps ``min(n_components, ceil(sqrt(n_texts)), n_texts - 1,
        n_words - 1)``.
    max_features : int or None
        Vocabulary size: the most frequent words are kept.
    min_df : int or float
        Ignore words found in fewer texts (an int) or a smaller share of texts (a float).
    random_state : int
        Seed of the randomized SVD.

    Attributes
    ----------
    vectorizer_ : TfidfVectorizer
    svd_ : TruncatedSVD
    scaler_ : StandardScaler
    n_components_ : int
        Dimensions of the output.
    n_words_ : int
        Size of the vocabulary.
    """

    def __init__(self, n_components=DEFAULT_N_COMPONENTS, max_features=20000, min_df=1, random_state=0):
        self.n_components = n_components
        self.max_features = max_features
        self.min_df = min_df
        self.random_state = random_state

    def fit(self, texts, y=None):
        """Learn the vocabulary, the SVD and the column scales from ``texts`` (a list of str)."""
        self.fit_transform(texts)
        return self

    def fit_transform(self, texts, y=None) -> np.ndarray:
        """Fit on ``texts`` and return their features, shape ``(n_texts, n_components_)``, float64."""
        texts = check_texts(texts)
        k_max = self.n_components
        k_max = check_int(k_max, "n_components", minimum=1)
        self.vectorizer_ = TfidfVectorizer(
            lowercase=True,
            strip_accents="unicode",
            sublinear_tf=True,
            min_df=self.min_df,
            max_features=self.max_features,
            dtype=np.float64,
        )
        try:
            tfidf = self.vectorizer_.fit_transform(texts)
        except ValueError as exc:  # "empty vocabulary": no text has a word of two letters
            raise InvalidInputError(
                f"texts: no words found in {len(texts)} texts (words are runs of two or more letters or digits)"
            ) from exc
        self.n_words_ = tfidf.shape[1]
        if self.n_words_ < 2:
            raise InvalidInputError(
                f"texts: only {self.n_words_} distinct word in {len(texts)} texts; nothing tells them apart"
            )
        n = len(texts)
        self.n_components_ = int(min(k_max, math.ceil(math.sqrt(n)), n - 1, self.n_words_ - 1))
        self.svd_ = TruncatedSVD(
            self.n_components_, algorithm="randomized", n_iter=7, random_state=self.random_state
        )
        with np.errstate(
            divide="ignore", invalid="ignore"
        ):  # identical texts: the unused variance ratio is 0/0
            Z = self.svd_.fit_transform(tfidf)
        self.scaler_ = StandardScaler()
        return self.scaler_.fit_transform(Z)

    def transform(self, texts) -> np.ndarray:
        """Features of ``texts`` with the fitted vocabulary, SVD and scales."""
        if not hasattr(self, "scaler_"):
            raise NotFittedError("TextFeaturizer: call fit (or fit_transform) with texts first")
        texts = check_texts(texts, min_texts=1)
        return self.scaler_.transform(self.svd_.transform(self.vectorizer_.transform(texts)))

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        if not hasattr(self, "n_components_"):
            raise NotFittedError("TextFeaturizer: call fit (or fit_transform) with texts first")
        return np.array([f"lsa{k}" for k in range(self.n_components_)], dtype=object)

    def identity(self) -> dict:
        """What makes two featurisers give the same numbers (compared when an answer store is resumed)."""
        return {
            "featurizer": "tfidf-svd-standardised",
            "max_features": self.max_features,
            "min_df": self.min_df,
            "random_state": self.random_state,
        }

    def describe(self) -> dict:
        """The settings and sizes of a fitted featuriser (what an answer store records about its features)."""
        import sklearn

        if not hasattr(self, "n_components_"):
            raise NotFittedError("TextFeaturizer: call fit (or fit_transform) with texts first")
        return {
            **self.identity(),
            "n_components": int(self.n_components_),
            "n_words": int(self.n_words_),
            "scikit-learn": sklearn.__version__,
        }
