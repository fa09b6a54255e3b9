"""Texts by meaning: WordLlama loads offline, texts on one topic land near each other, the fallback says so, the
``--features`` choices, and a resumed store keeps its own features and refuses others."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from jaxclust.active import AnswerStore
from jaxclust.apps.features import features_path, session_features
from jaxclust.apps.items import items_from_texts
from jaxclust.errors import InvalidInputError, JaxclustWarning, StoreError, StoreMismatchError
from jaxclust.text import PrecomputedEmbeddings, TextEmbedder, TextFeaturizer, text_featurizer
from jaxclust.text import embed as E

SPORT = ["the striker scored twice in the cup final", "the goalkeeper saved a penalty in extra time"]
MONEY = ["the central bank raised interest rates again", "shares fell as inflation rose and bonds sold off"]
TEXTS = [
    *SPORT,
    *MONEY,
    "the midfielder was sent off after a late tackle",
    "the stock market rallied on profits",
]
TOPIC = np.array([0, 0, 1, 1, 0, 1])


def test_wordllama_loads_and_embeds_with_no_network(monkeypatch):
    def refuse(*a, **k):
        raise OSError("network used")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    X = TextEmbedder().fit_transform(TEXTS)
    assert X.shape == (6, 256) and X.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-12)
    # by meaning: each text is nearer (cosine) to the other texts of its topic than to any of the other topic
    cos = X @ X.T
    for i in range(6):
        same = [cos[i, j] for j in range(6) if j != i and TOPIC[j] == TOPIC[i]]
        other = [cos[i, j] for j in range(6) if TOPIC[j] != TOPIC[i]]
        assert min(same) > max(other), (i, same, other)


def test_each_row_is_its_texts_own_embedding_whatever_the_order_or_batch():
    """Texts are embedded in batches of similar length: every row is still the embedding of its own text alone."""
    texts = [t * k for k, t in enumerate(TEXTS, 1)] * 30  # lengths all different, more than one batch
    got = TextEmbedder().fit_transform(texts)
    alone = np.vstack([TextEmbedder().fit_transform([t]) for t in texts[: len(TEXTS)]])
    np.testing.assert_allclose(got[: len(TEXTS)], alone, atol=1e-6)
    np.testing.assert_array_equal(got[len(TEXTS) :], np.tile(got[: len(TEXTS)], (29, 1)))
    perm = np.random.default_rng(0).permutation(len(texts))
    np.testing.assert_allclose(TextEmbedder().fit_transform([texts[k] for k in perm]), got[perm], atol=1e-6)


def test_only_the_start_of_a_long_text_is_read():
    long = TEXTS[0] + " " + " ".join(["bank rates inflation"] * 500)
    a = TextEmbedder(max_chars=len(TEXTS[0])).fit_transform([long, "a"])
    b = TextEmbedder().fit_transform([TEXTS[0], "a"])
    np.testing.assert_allclose(a, b, atol=1e-12)
    assert not np.allclose(TextEmbedder().fit_transform([long, "a"]), b, atol=1e-3)


def test_without_wordllama_the_default_is_tfidf_with_a_warning_that_says_how_to_install(monkeypatch):
    monkeypatch.setattr(E, "_have_wordllama", lambda: False)
    with pytest.warns(JaxclustWarning, match=r'pip install "jaxclust\[text\]"'):
        model = text_featurizer(None)
    assert isinstance(model, TextFeaturizer)
    with pytest.raises(ImportError, match=r"jaxclust\[text\]"):
        text_featurizer("wordllama")


def test_the_features_option_picks_each_featuriser(tmp_path):
    assert isinstance(text_featurizer("auto"), TextEmbedder)
    assert isinstance(text_featurizer("tfidf"), TextFeaturizer)
    assert isinstance(text_featurizer(tmp_path / "mine.npy"), PrecomputedEmbeddings)
    assert isinstance(text_featurizer(str(tmp_path)), E.SentenceTransformerEmbedder)
    with pytest.raises(InvalidInputError, match=r"features 'glove': expected one of auto, wordllama, tfidf"):
        text_featurizer("glove")


def test_precomputed_embeddings_are_checked_and_scaled_to_unit_rows(tmp_path):
    path = tmp_path / "mine.npy"
    np.save(path, np.array([[3.0, 4.0], [0.0, 2.0]]))
    np.testing.assert_allclose(
        PrecomputedEmbeddings(path).fit_transform(["a b", "c d"]), [[0.6, 0.8], [0.0, 1.0]]
    )
    with pytest.raises(
        InvalidInputError, match=r"one row per text \(3 rows\), got an array of shape \(2, 2\)"
    ):
        PrecomputedEmbeddings(path).fit_transform(["a", "b", "c"])
    np.save(path, np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(InvalidInputError, match="row 1 is all zeros"):
        PrecomputedEmbeddings(path).fit_transform(["a b", "c d"])
    with pytest.raises(InvalidInputError, match="no such file"):
        PrecomputedEmbeddings(tmp_path / "none.npy").fit_transform(["a b", "c d"])


def test_a_resumed_store_keeps_its_features_and_refuses_others(tmp_path):
    items = items_from_texts(TEXTS)
    store = tmp_path / "a.sqlite"
    with AnswerStore(store) as s:
        X = session_features(items, s)  # the default: WordLlama
    with AnswerStore(store) as s:
        np.testing.assert_array_equal(session_features(items, s), X)  # nothing asked: the store's own
        np.testing.assert_array_equal(session_features(items, s, TextEmbedder()), X)  # the same, asked
        with pytest.raises(
            StoreMismatchError, match=r"made on other features \(featurizer 'wordllama' there, "
        ):
            session_features(items, s, TextFeaturizer())
        with pytest.raises(StoreMismatchError, match=r"dim 256 there, 128 asked for here"):
            session_features(items, s, TextEmbedder(dim=128))


def test_a_store_made_on_tfidf_resumes_on_tfidf_and_remakes_lost_features_with_it(tmp_path):
    items = items_from_texts(TEXTS)
    store = tmp_path / "old.jsonl"
    with AnswerStore(store) as s:
        X = session_features(items, s, TextFeaturizer())  # as every text store was made before
        fp = s.meta["fingerprint"]
    features_path(store, fp).unlink()
    with AnswerStore(store) as s:
        np.testing.assert_array_equal(session_features(items, s), X)  # remade by TF-IDF, not the new default


def test_lost_precomputed_features_are_not_guessed(tmp_path):
    items = items_from_texts(TEXTS)
    mine = tmp_path / "mine.npy"
    np.save(mine, np.random.default_rng(0).normal(size=(6, 4)))
    store = tmp_path / "a.sqlite"
    with AnswerStore(store) as s:
        session_features(items, s, PrecomputedEmbeddings(mine))
        fp = s.meta["fingerprint"]
    features_path(store, fp).unlink()
    with AnswerStore(store) as s, pytest.raises(StoreError, match="they were your own embeddings"):
        session_features(items, s)


def test_an_empty_text_is_named():
    with pytest.raises(InvalidInputError, match=r"texts: text 1 is empty \(1 of 3 are\)"):
        TextEmbedder().fit_transform(["the cup final", "  ", "interest rates"])


def test_a_dimension_the_model_lacks_is_named():
    with pytest.raises(InvalidInputError, match=r"TextEmbedder\(dim=100\): expected one of 64, 128, 256"):
        TextEmbedder(dim=100).fit_transform(TEXTS)
