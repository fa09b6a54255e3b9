"""The feature matrix of an annotation session, identical every time its answer store is resumed.

* Items that are **numbers** (a CSV of numbers, a ``.npy`` array of embeddings) are standardised column by column
  (mean 0, variance 1). A column with the same value in every row is passed on unchanged, not set to 0: the
  model decides what to do with it (the DPMM's default prior leaves constant columns out, with a warning that
  names them). The store keeps a fingerprint of the matrix; resuming on other numbers is refused.
* Items that are **texts** go through a featuriser once, when the store is created: by default
  :class:`jaxclust.text.TextEmbedder` (WordLlama embeddings, rows of unit length) when ``jaxclust[text]`` is
  installed, else :class:`jaxclust.text.TextFeaturizer` (TF-IDF -> truncated SVD -> standardised) with a
  warning; or the one the user names (:func:`jaxclust.text.text_featurizer`). The matrix is saved beside the store as
  ``<store>.features-<fingerprint>.npy`` (written to a temporary file, ``fsync``'d, renamed), and the store's
  meta records the texts' fingerprint, the matrix's fingerprint and the featuriser's settings. A resumed
  session loads that file, so it uses exactly the same features even if scikit-learn (or its randomness)
  changed; resuming on texts that changed is refused with :class:`~jaxclust.errors.StoreMismatchError` naming
  the file, and so is resuming with other features asked for (another ``--features``). If the side file is
  lost, the features are computed again by the featuriser the meta records and used only if they are the same.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from jaxclust import errors
from jaxclust.active.store import data_fingerprint
from jaxclust.apps.items import Items
from jaxclust.errors import InvalidInputError, StoreError, StoreMismatchError
from jaxclust.files import atomic_write
from jaxclust.validation import check_array

__all__ = ["session_features", "compute_features", "standardise", "features_path", "projection_2d"]


def standardise(X: np.ndarray) -> np.ndarray:
    """Columns to mean 0 and variance 1; a constant column is returned unchanged (see the module docstring)."""
    X = np.asarray(X, dtype=np.float64)
    constant = np.all(X == X[:1], axis=0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        sd = X.std(axis=0)
        Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)  # the formula of earlier versions: same bits
        out = np.where(constant, X, Z)
        bad = ~constant & ~(np.isfinite(sd) & (sd > 0) & np.all(np.isfinite(Z), axis=0))
        for c in np.flatnonzero(bad):  # magnitudes near the float64 limits: scale first, then standardise
            y = X[:, c] / np.max(np.abs(X[:, c]))
            out[:, c] = (y - y.mean()) / y.std()
    return out


def features_path(store_path: str | os.PathLike, fingerprint: str) -> Path:
    """Where the features of a text session live: ``<store>.features-<fingerprint>.npy``."""
    p = Path(store_path)
    return p.with_name(f"{p.name}.features-{fingerprint}.npy")


def _save(path: Path, X: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, X, allow_pickle=False)
    try:
        atomic_write(path, buf.getvalue())
    except OSError as exc:
        raise StoreError(
            f"answer store features {path}: could not be written ({exc.strerror}); nothing was stored, free disk "
            "space or fix permissions and run again"
        ) from exc


def _load(path: Path, n: int, fingerprint: str) -> np.ndarray | None:
    """The saved matrix if it is intact (right shape and fingerprint), else None."""
    try:
        X = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if X.ndim != 2 or X.shape[0] != n or X.dtype != np.float64 or data_fingerprint(X) != fingerprint:
        return None
    return X


def compute_features(items: Items, featurizer=None) -> np.ndarray:
    """The features of ``items`` computed afresh: texts through ``featurizer`` (default
    :func:`jaxclust.text.text_featurizer`'s), numbers checked and standardised. Named errors for bad items; run
    it before creating a store, so that bad items create nothing (then pass the same ``featurizer`` object and
    the result to :func:`session_features`)."""
    if items.kind == "numbers":
        X = standardise(check_array(items.X, name=items.label, min_rows=2))
    else:
        from jaxclust.text.embed import text_featurizer

        model = featurizer if featurizer is not None else text_featurizer(None)
        X = np.asarray(model.fit_transform(items.texts), dtype=np.float64)
    if len(X) and np.all(X == X[:1]):
        what = "texts" if items.kind == "texts" else "rows"
        raise InvalidInputError(
            f"{items.label}: all {len(X)} {what} give the same features (identical items); there is nothing to cluster"
        )
    return X


def session_features(items: Items, store, featurizer=None, computed: np.ndarray | None = None) -> np.ndarray:
    """The feature matrix of ``items`` for a session on ``store`` (an open
    :class:`~jaxclust.active.AnswerStore`), saved with it / loaded from it (see the module docstring).

    ``featurizer`` (texts only): a transformer with ``fit_transform(texts)``, default
    :func:`jaxclust.text.text_featurizer`'s on a new store, the store's own on a resumed one (another is refused).
    ``computed``: what :func:`compute_features` gave for these items
    with this featuriser (used when the store has no features yet, instead of computing them again).

    Raises
    ------
    StoreMismatchError
        The store was started on other items (other texts, other numbers, texts instead of numbers); the
        message names the data file and the store.
    StoreError
        The saved features are lost or damaged and computing them again gives other numbers.
    """
    n = len(items)
    meta = store.check_meta({})  # fresh: another annotator may have started the store meanwhile
    where = items.label

    def refuse(key: str, what: str, stored: Any, given: Any) -> StoreMismatchError:
        return StoreMismatchError(
            f"{where}: {what} the answer store {store.path} was started on ({key} {stored!r} there, {given!r} "
            "here); its answers name items by their position, so they would land on other items. Restore the "
            "data the store was made with, or pass a new store for these items",
            key=key,
            stored=stored,
            given=given,
        )

    if "n" in meta and meta["n"] != n:
        raise refuse("n", f"has {n} items, not the {meta['n']} items", meta["n"], n)
    if items.kind == "numbers":
        X = compute_features(items) if computed is None else computed
        fp = data_fingerprint(X)
        if "texts" in meta:
            raise refuse("texts", "holds numbers, not the texts", meta["texts"], None)
        if meta.get("fingerprint", fp) != fp:
            raise refuse("fingerprint", "differs from the data", meta["fingerprint"], fp)
        return X

    from jaxclust.text.embed import same_featurizer, text_featurizer
    from jaxclust.text.featurize import text_fingerprint

    tfp = text_fingerprint(items.texts)
    if "texts" not in meta and "fingerprint" in meta:
        raise refuse("texts", "holds texts, not the numbers", None, tfp)
    if "texts" in meta and meta["texts"] != tfp:
        raise refuse("texts", "has other texts than those", meta["texts"], tfp)
    if "texts" in meta:  # resuming: the store's own features, and no others
        diff = None if featurizer is None else same_featurizer(featurizer, meta.get("featurizer"))
        if diff is not None:
            key, stored, given = diff
            raise StoreMismatchError(
                f"{where}: the answer store {store.path} was made on other features ({key} {stored!r} there, "
                f"{given!r} asked for here); its answers were given on those. Leave out --features to resume "
                "with the store's own, or pass a new store for these features",
                key="featurizer",
                stored=stored,
                given=given,
            )
        model = featurizer  # None: the store's own, made again only if its saved features are lost
    else:
        model = featurizer if featurizer is not None else text_featurizer(None)
    for _ in range(2):  # a second pass only when another session created the store meanwhile
        if "texts" in meta and "fingerprint" in meta:
            return _saved_features(store, items, model, meta["fingerprint"])
        X = np.asarray(model.fit_transform(items.texts) if computed is None else computed, dtype=np.float64)
        fp = data_fingerprint(X)
        _save(features_path(store.path, fp), X)
        try:
            store.check_meta({"n": n, "texts": tfp, "fingerprint": fp})
        except StoreMismatchError as exc:  # another shared session saved its features first: use those
            if exc.key != "fingerprint":
                raise
            meta = store.check_meta({})
            continue
        describe = getattr(model, "describe", None)
        if callable(describe) and "featurizer" not in store.meta:
            try:  # for the record only: which settings and scikit-learn made the features
                store.check_meta({"featurizer": describe()})
            except (StoreMismatchError, errors.NotFittedError):  # read on failure: loads scikit-learn
                pass
        return X
    return _saved_features(store, items, model, meta["fingerprint"])


def _saved_features(store, items: Items, model, fingerprint: str) -> np.ndarray:
    from jaxclust.text.embed import featurizer_of_record

    path = features_path(store.path, fingerprint)
    X = _load(path, len(items), fingerprint)
    if X is not None:
        return X
    model = model if model is not None else featurizer_of_record(store.meta.get("featurizer"))
    if model is None:
        raise StoreError(
            f"answer store {store.path}: the features saved with it ({path}) are missing or damaged, and they "
            "were your own embeddings; restore that file, or pass the same embeddings again with --features"
        )
    X = np.asarray(model.fit_transform(items.texts), dtype=np.float64)
    if data_fingerprint(X) != fingerprint:
        raise StoreError(
            f"answer store {store.path}: the features saved with it ({path}) are missing or damaged, and "
            "computing them again from the texts gives other numbers (another scikit-learn version or "
            "featuriser?); restore that file, or start a new store"
        )
    _save(path, X)
    return X


def projection_2d(X: np.ndarray) -> np.ndarray:
    """(n, 2) PCA projection (seeded) of the features, for the annotators' figures."""
    from sklearn.decomposition import PCA

    if X.shape[1] == 1:
        return np.column_stack([X[:, 0], np.zeros(len(X))])
    return PCA(n_components=2, random_state=0).fit_transform(X)
