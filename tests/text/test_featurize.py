"""TextFeaturizer: the documented sizes, a fixed seed, standardised columns, scikit-learn's contract, named errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone

from jaxclust.errors import InvalidInputError, InvalidInputTypeError, NotFittedError
from jaxclust.text import TextFeaturizer, text_fingerprint

WORDS = {
    "sport": "match goal team coach season league striker referee stadium score".split(),
    "food": "recipe oven flour butter sauce garlic onion bake simmer pepper".split(),
    "sky": "rain storm cloud wind forecast sunny snow thunder humid breeze".split(),
}


def texts(n_per: int = 12, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    out, y = [], []
    for t, words in enumerate(WORDS.values()):
        for _ in range(n_per):
            out.append(" ".join(rng.choice(words, size=5)))
            y.append(t)
    return out, np.array(y)


@pytest.mark.parametrize("n_per", [1, 4, 12, 40])
def test_the_number_of_dimensions_follows_the_documented_formula(n_per):
    docs, _ = texts(n_per)
    f = TextFeaturizer()
    Z = f.fit_transform(docs)
    n = len(docs)
    assert f.n_components_ == min(100, math.ceil(math.sqrt(n)), n - 1, f.n_words_ - 1)
    assert Z.shape == (n, f.n_components_) and Z.dtype == np.float64
    assert TextFeaturizer(n_components=2).fit_transform(docs).shape[1] == min(2, n - 1)


def test_columns_are_standardised_and_the_same_seed_gives_the_same_features():
    docs, y = texts()
    Z = TextFeaturizer().fit_transform(docs)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(Z.std(axis=0), 1.0, atol=1e-10)
    np.testing.assert_array_equal(TextFeaturizer().fit_transform(docs), Z)
    # the topics are what the first dimensions separate: class means far apart relative to the spread
    means = np.array([Z[y == t, :2].mean(axis=0) for t in range(3)])
    assert min(np.linalg.norm(means[a] - means[b]) for a in range(3) for b in range(a + 1, 3)) > 1.0


def test_transform_gives_fit_transforms_features_and_the_estimator_clones():
    docs, _ = texts()
    f = TextFeaturizer(n_components=5)
    Z = f.fit_transform(docs)
    np.testing.assert_allclose(f.transform(docs), Z, atol=1e-10)
    assert clone(f).get_params() == {"n_components": 5, "max_features": 20000, "min_df": 1, "random_state": 0}
    assert list(f.get_feature_names_out()) == [f"lsa{k}" for k in range(5)]
    assert f.describe()["featurizer"] == "tfidf-svd-standardised" and f.describe()["n_components"] == 5


def test_bad_texts_are_named_errors():
    with pytest.raises(InvalidInputTypeError, match="texts: item 1 is a int, not a string"):
        TextFeaturizer().fit_transform(["a text", 3])
    with pytest.raises(InvalidInputTypeError, match="texts: expected a list of strings, got str"):
        TextFeaturizer().fit_transform("one long text")
    with pytest.raises(InvalidInputError, match="texts: expected at least 2 texts, got 1"):
        TextFeaturizer().fit_transform(["alone"])
    with pytest.raises(InvalidInputError, match="texts: no words found in 2 texts"):
        TextFeaturizer().fit_transform(["!", "? ."])
    with pytest.raises(InvalidInputError, match="only 1 distinct word"):
        TextFeaturizer().fit_transform(["same", "same same"])
    with pytest.raises(InvalidInputError, match="n_components: expected an int >= 1, got 0"):
        TextFeaturizer(n_components=0).fit_transform(["a bb", "cc dd"])
    with pytest.raises(NotFittedError, match="TextFeaturizer: call fit"):
        TextFeaturizer().transform(["x"])


def test_the_text_fingerprint_tells_texts_and_their_order_apart():
    assert text_fingerprint(["a", "b"]) == text_fingerprint(["a", "b"])
    assert text_fingerprint(["a", "b"]) != text_fingerprint(["b", "a"])
    assert text_fingerprint(["a b"]) != text_fingerprint(["a", "b"])
