"""The L3M estimator shell: parameters, validation errors, determinism, pickling, constraints."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).parent))
from l3m_synth import canonical, separable_document  # noqa: E402

from jaxclust.constraints import Constraints  # noqa: E402
from jaxclust.errors import InvalidInputError, NotFittedError  # noqa: E402
from jaxclust.l3m import L3M  # noqa: E402

TRAIN = [separable_document(12, seed=s, noise=0.0) for s in range(8)]
FEATS = [f for f, _ in TRAIN]
GOLD = [c for _, c in TRAIN]


@pytest.fixture(scope="module")
def fitted():
    return L3M(gamma=1.0, optimizer="adam", learning_rate=0.3, n_epochs=40, batch_size=4).fit(FEATS, GOLD)


def test_top_level_export_and_params():
    import jaxclust

    assert jaxclust.L3M is L3M
    est = L3M(gamma=0.25, threshold=0.4)
    assert est.get_params()["gamma"] == 0.25 and clone(est).threshold == 0.4


def test_fit_predict_recovers_clusters_and_is_deterministic(fitted):
    test_f, test_c = separable_document(12, seed=123, noise=0.0)
    labels = fitted.predict(test_f)
    np.testing.assert_array_equal(labels, canonical(test_c))
    assert labels.dtype == np.int64 and isinstance(fitted.coef_, np.ndarray) and fitted.n_features_in_ == 3
    again = L3M(gamma=1.0, optimizer="adam", learning_rate=0.3, n_epochs=40, batch_size=4).fit(FEATS, GOLD)
    np.testing.assert_array_equal(again.coef_, fitted.coef_)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict(test_f), labels)
    many = fitted.predict_many([test_f, FEATS[0]])
    np.testing.assert_array_equal(many[0], labels)


def test_predict_with_constraints_overrides_model(fitted):
    test_f, test_c = separable_document(12, seed=123, noise=0.0)
    labels = fitted.predict(test_f)
    i = int(np.flatnonzero(labels == labels[-1])[0])  # earliest item of the last item's cluster
    cons = Constraints(12, cannot_link=[(i, 11)])
    forced = fitted.predict(test_f, constraints=cons)
    assert forced[11] != forced[i]
    j = int(np.flatnonzero(labels != labels[-1])[0])
    joined = fitted.predict(test_f, constraints=Constraints(12, must_link=[(j, 11)]))
    assert joined[11] == joined[j]


@pytest.mark.parametrize(
    "param,value",
    [
        ("gamma", -1.0),
        ("threshold", 1.5),
        ("l2", float("nan")),
        ("n_epochs", 0),
        ("decoding", "beam"),
        ("max_antecedents", 0),
        ("mode", "full"),
    ],
)
def test_bad_hyperparameters_name_the_culprit(param, value):
    with pytest.raises(InvalidInputError, match=param):
        L3M(**{param: value}).fit(FEATS[:1], GOLD[:1])


def test_bad_documents():
    with pytest.raises(NotFittedError):
        L3M().predict(FEATS[0])
    with pytest.raises(InvalidInputError, match="list of documents"):
        L3M().fit(FEATS[0], GOLD[0])
    bad = FEATS[0].copy()
    bad[3, 1, 2] = np.nan
    with pytest.raises(InvalidInputError, match="item 3"):
        L3M().fit([bad], [GOLD[0]])
    with pytest.raises(InvalidInputError, match="clusters"):
        L3M().fit([FEATS[0]], [GOLD[0][:5]])
    with pytest.raises(InvalidInputError, match="real numbers"):
        L3M().fit([FEATS[0].astype(complex)], [GOLD[0]])
    with pytest.raises(InvalidInputError, match="no gold clusters"):
        L3M().fit([FEATS[0]])


def test_mlp_estimator_pickles():
    est = L3M(scorer="mlp", hidden=8, n_epochs=1, optimizer="adam", batch_size=4).fit(FEATS[:2], GOLD[:2])
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict(FEATS[0]), est.predict(FEATS[0]))
    assert not hasattr(est, "coef_")
