"""``L3M``: scikit-learn style shell over the jitted L3M core (scorer, loss, optax training, online
inference)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator

from jaxclust.constraints import as_constraints
from jaxclust.errors import ConstraintError, InvalidInputError, NotFittedError
from jaxclust.l3m.constraints import codes_from_constraints
from jaxclust.l3m.document import Document, pad_batch
from jaxclust.l3m.infer import predict_batch
from jaxclust.l3m.model import make_scorer
from jaxclust.l3m.train import fit_scorer
from jaxclust.validation import Int, Options, Real, looks_like_constraints, prng_key, validate_params

__all__ = ["L3M"]


def _as_list(value, name: str) -> list:
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise InvalidInputError(
            f"{name}: expected a list (one entry per document), got {type(value).__name__}"
        )
    return list(value)


def _to_numpy(tree):
    return jax.tree.map(lambda x: np.asarray(x) if eqx.is_array(x) else x, tree)


class L3M(BaseEstimator):
    """Latent left-linking model (Samdani, Chang & Roth 2014) for supervised online clustering.

    Items of a document arrive in order; item ``i`` links to an earlier item ``j`` with probability
    ``exp(s_ij / gamma) / Z_i`` or starts a new cluster (dummy link, learned score). Training minimises the
    gamma-scaled negative log-likelihood of the gold clusterings (marginalising latent left-linking forests)
    with
    optax; prediction is greedy online clustering with a threshold (or best-left-link decoding).

    Parameters
    ----------
    gamma : float, default 1.0
        Temperature >= 0 (0 = best-left-link / latent structural SVM, 1 = hidden-variable CRF).
    threshold : float, default 0.5
        Greedy inference joins the best cluster if its summed link probability exceeds this.
    l2 : float, default 1e-4
        L2 strength ``(l2/2) ||w||^2`` added to the mean per-item loss.
    optimizer : None | "sgd" | "adam" | optax.GradientTransformation, default None (SGD, inverse-time decay)
    learning_rate : float, default 0.1
        Initial step of the built-in optimizers (ignored for a given optax transformation).
    n_epochs : int, default 20
    batch_size : int, default 8
        Documents per training step (``mode="batch"``).
    mode : {"batch", "item"}, default "batch"
        Mini-batches of documents, or the seed's per-item online SGD.
    scorer : {"linear", "mlp"}, default "linear"
    hidden : int, default 32
        Hidden width of the MLP scorer.
    max_antecedents : int or None, default None
        Candidate window (None = every earlier item, the exact model).
    decoding : {"greedy", "best_link"}, default "greedy"
    constraint_weight : float, default inf
        CL3M: ``inf`` = hard must/cannot-link masks, finite = soft score offset ``rho * code``.
    patience : int, default 3
        Early-stopping patience (epochs) when a dev set is given to ``fit``.
    random_state : int, default 0
    verbose : bool, default False
        Progress bar over epochs.

    Attributes
    ----------
    scorer_ : equinox Module with NumPy leaves (the learned scorer)
    coef_ : ndarray (F,) (linear scorer only)
    dummy_score_ : float
    n_features_in_ : int
    history_ : dict, training/dev curves
    n_iter_ : int, epochs run
    """

    _parameter_constraints = {
        "gamma": Real(0.0),
        "threshold": Real(0.0, 1.0),
        "l2": Real(0.0),
        "learning_rate": Real(0.0),
        "constraint_weight": Real(0.0, allow_inf=True),
        "n_epochs": Int(1),
        "batch_size": Int(1),
        "patience": Int(1),
        "max_antecedents": Int(1, none=True),
        "decoding": Options(("greedy", "best_link")),
        "mode": Options(("batch", "item")),
    }
    _mlp_constraints = {"hidden": Int(1)}

    def __init__(
        self,
        gamma=1.0,
        threshold=0.5,
        l2=1e-4,
        optimizer=None,
        learning_rate=0.1,
        n_epochs=20,
        batch_size=8,
        mode="batch",
        scorer="linear",
        hidden=32,
        max_antecedents=None,
        decoding="greedy",
        constraint_weight=np.inf,
        patience=3,
        random_state=0,
        verbose=False,
    ):
        self.gamma = gamma
        self.threshold = threshold
        self.l2 = l2
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.n_epochs = n_epochs
        self.batch_size = batch_size
        self.mode = mode
        self.scorer = scorer
        self.hidden = hidden
        self.max_antecedents = max_antecedents
        self.decoding = decoding
        self.constraint_weight = constraint_weight
        self.patience = patience
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        validate_params(self)
        if self.scorer == "mlp":
            validate_params(self, rules=self._mlp_constraints)

    def _as_document(self, doc, clusters=None, constraints=None, k=0, need_gold=False):
        if isinstance(doc, Document):
            if self.max_antecedents is not None and doc.n_antecedents > self.max_antecedents:
                doc = Document(
                    doc.features[:, : self.max_antecedents],
                    doc.clusters,
                    None if doc.codes is None else doc.codes[:, : self.max_antecedents],
                    doc.doc_id,
                )
            if clusters is not None:
                doc = Document(doc.features, np.asarray(clusters), doc.codes, doc.doc_id)
        else:
            arr = np.asarray(doc)
            if arr.ndim != 3 or arr.shape[0] != arr.shape[1]:
                raise InvalidInputError(
                    f"document {k}: expected a Document or an (m, m, F) pair-feature array, got "
                    f"shape {arr.shape}"
                )
            doc = Document.from_pairwise(arr, clusters, max_antecedents=self.max_antecedents, doc_id=str(k))
        if need_gold and doc.clusters is None:
            raise InvalidInputError(f"document {k} ({doc.doc_id!r}) has no gold clusters")
        if constraints is not None:
            constraints = as_constraints(
                constraints,
                doc.n_items,
                where=f"L3M, document {k}",
                subject="the document has {n} items",
                soft=False,
            )
            doc = Document(
                doc.features,
                doc.clusters,
                codes_from_constraints(constraints, doc.n_items, doc.n_antecedents),
                doc.doc_id,
            )
        return doc

    def _prepare(self, documents, clusters, constraints, need_gold):
        if isinstance(documents, (Document, np.ndarray)):
            raise InvalidInputError("documents must be a list of documents (wrap a single one in a list)")
        if looks_like_constraints(clusters):
            raise ConstraintError(
                "clusters: got constraints where L3M takes gold cluster labels; pass constraints=[...] (one "
                "Constraints or None per document)"
            )
        if looks_like_constraints(constraints):
            raise ConstraintError(
                f"constraints: expected a list with one Constraints (or None) per document, got one "
                f"{type(constraints).__name__}; wrap it: constraints=[c]"
            )
        documents = _as_list(documents, "documents")
        if not documents:
            raise InvalidInputError("documents is empty")
        n = len(documents)
        clusters = [None] * n if clusters is None else _as_list(clusters, "clusters")
        constraints = [None] * n if constraints is None else _as_list(constraints, "constraints")
        if len(clusters) != n or len(constraints) != n:
            raise InvalidInputError(
                f"got {n} documents but {len(clusters)} cluster lists and {len(constraints)} constraint sets"
            )
        return [
            self._as_document(d, c, k=k, constraints=cs, need_gold=need_gold)
            for k, (d, c, cs) in enumerate(zip(documents, clusters, constraints, strict=False))
        ]

    # ------------------------------------------------------------------ API
    def fit(
        self,
        documents,
        clusters=None,
        *,
        dev_documents=None,
        dev_clusters=None,
        constraints=None,
        score_fn=None,
    ):
        """Learn the left-link scorer from documents with gold clusters.

        Parameters
        ----------
        documents : list of Document or of (m, m, F) pair-feature arrays
        clusters : list of (m,) int arrays, optional (required for arrays; overrides Document.clusters)
        dev_documents, dev_clusters : optional dev set for early stopping (dev objective)
        constraints : list of jaxclust.Constraints (or None) per document, optional (CL3M in training)
        score_fn : callable(estimator) -> float, optional, dev criterion (higher is better) for early stopping

        Returns
        -------
        self
        """
        self._check_params()
        docs = self._prepare(documents, clusters, constraints, need_gold=True)
        n_feat = docs[0].n_features
        for d in docs:
            if d.n_features != n_feat:
                raise InvalidInputError(
                    f"document {d.doc_id!r} has {d.n_features} features, expected {n_feat}"
                )
        dev = self._prepare(dev_documents, dev_clusters, None, True) if dev_documents is not None else None
        key = prng_key(self.random_state)
        init = make_scorer(self.scorer, n_feat, key=key, hidden=self.hidden)
        wrapped = None
        if score_fn is not None:

            def wrapped(s):
                self._set_fitted(s, n_feat, {})
                return score_fn(self)

        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        best, history = fit_scorer(
            docs,
            init,
            optimizer=self.optimizer,
            learning_rate=self.learning_rate,
            gamma=self.gamma,
            l2=self.l2,
            weight=self.constraint_weight,
            n_epochs=self.n_epochs,
            batch_size=self.batch_size,
            mode=self.mode,
            dev_docs=dev,
            score_fn=wrapped,
            patience=self.patience,
            seed=seed,
            progress=self.verbose,
        )
        self._set_fitted(best, n_feat, history)
        return self

    def _set_fitted(self, scorer, n_feat, history):
        self.scorer_ = _to_numpy(scorer)
        self.dummy_score_ = float(self.scorer_.dummy)
        if hasattr(self.scorer_, "weight"):
            self.coef_ = np.asarray(self.scorer_.weight, np.float64)
        self.n_features_in_ = n_feat
        self.history_ = history
        self.n_iter_ = max(len(history.get("train_loss", [])), 1)

    def _check_fitted(self):
        if not hasattr(self, "scorer_"):
            raise NotFittedError("this L3M instance is not fitted yet; call fit first")

    def predict_many(self, documents, constraints=None, *, batch_size=None):
        """Cluster several documents; returns a list of (m_d,) int label arrays (ids from 0 by first item)."""
        self._check_fitted()
        self._check_params()
        docs = self._prepare(documents, None, constraints, need_gold=False)
        for d in docs:
            if d.n_features != self.n_features_in_:
                raise InvalidInputError(
                    f"document {d.doc_id!r} has {d.n_features} features; the model was fitted "
                    f"with {self.n_features_in_}"
                )
        bs = batch_size or self.batch_size
        order = np.argsort([d.n_items for d in docs], kind="stable")
        out = [None] * len(docs)
        args = [jnp.asarray(v, jnp.float32) for v in (self.gamma, self.threshold, self.constraint_weight)]
        for s in range(0, len(docs), bs):
            idx = order[s : s + bs]
            batch = pad_batch([docs[k] for k in idx], n_docs=bs)
            labels = np.asarray(predict_batch(self.scorer_, batch, *args, self.decoding == "best_link"))
            for r, k in enumerate(idx):
                out[k] = labels[r, : docs[k].n_items].astype(np.int64)
        return out

    def predict(self, document, constraints=None):
        """Cluster one document online; returns (m,) int labels numbered 0, 1, ... by first item."""
        return self.predict_many([document], None if constraints is None else [constraints], batch_size=1)[0]
