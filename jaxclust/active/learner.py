"""The active-learning loop: fit, pick uncertain pairs, ask the oracle, add constraints, refit (host side).

The loop is plain Python on the host (it waits for people); the heavy parts, the sampler and the blockwise
link-entropy sweep, are jitted JAX functions called once per round.

Warm start. After the first round each refit starts every chain from its last state in the previous round
(``init_labels=previous.final_labels_``, repaired by the sampler to satisfy the new constraints) and runs
``warm_burnin`` burn-in sweeps instead of the model's full ``n_burnin``. This is a valid MCMC initialisation:
the constrained Gibbs kernel leaves the new constrained posterior invariant whatever the starting state, so
the chain's stationary law is unchanged; a start that is already near the old posterior (which differs from
the new one by a few constraints) just needs fewer sweeps to forget its start. Set ``warm_start=False`` to
refit from scratch.

Conflicts. Answers are turned into constraints with ``on_conflict="drop"`` semantics: an answer that
contradicts the constraints kept so far (possible with noisy people and pre-chosen batches, or with
user-supplied initial constraints) is dropped, recorded in the store with ``kept=False`` and reported in the
round's ``dropped`` list; the session never crashes on a conflict. Before each question in a batch the pair's
status is re-checked, so pairs made known by earlier answers of the same batch are skipped, not asked.

Resuming. With a ``store``, every answer is written before the next question is chosen, and every model fit
leaves a fit record (seed, position in the session, the chains' final states) before its samples are used. A
run on an existing store takes the last fit record, refits that fit exactly (same constraints, seed and warm
start), replays the answers given after it through the selection (checking that each is about the pair the
selection picks), and goes on asking: with the same data and settings the questions are the ones an
uninterrupted session would have asked, however often the session was killed. When the settings differ (or
the records do not fit together), every stored answer is applied and the model is refitted from scratch; no
stored answer is ever asked again or lost.

Stopping. ``run`` returns after ``n_queries`` answers, when the oracle raises ``SessionStopped``, when no
unknown pair is left, or, with ``stop_entropy``, when the model is confident about every unknown pair
(``stop_reason_`` says which).
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import numbers
import sys
import time
import warnings
from typing import Any

import numpy as np

from jaxclust.active.entropy import agreeing_samples, top_entropy_pairs
from jaxclust.active.oracles import SessionStopped, ask
from jaxclust.active.selection import STRATEGIES, random_pairs
from jaxclust.active.store import AnswerStore
from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError, JaxclustWarning
from jaxclust.validation import check_array, check_labels, prng_key, seed_from

__all__ = ["ActiveLearner", "score_samples", "data_fingerprint"]

METRICS = ("v_beta", "v_measure", "homogeneity", "completeness", "vi", "link_accuracy")


def data_fingerprint(X: np.ndarray) -> str:
    """Short SHA-256 of the float64 feature matrix, stored with the answers to refuse resuming on other
    data.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    return hashlib.sha256(repr(X.shape).encode() + X.tobytes()).hexdigest()[:16]


def score_samples(samples, labels) -> dict[str, float]:
    """Partition metrics of each sampled partition against gold ``labels``, averaged over the samples.

    Returns ``v_beta``, ``v_measure``, ``homogeneity``, ``completeness``, ``vi`` (nats) and ``link_accuracy``
    (fraction of item pairs whose same/different status matches the gold standard), plus ``n_clusters``.
    """
    from jaxclust.metrics.partition import (
        homogeneity_completeness_v_measure,
        pairwise_link_accuracy,
        v_beta,
        variation_of_information,
    )

    samples = np.atleast_2d(np.asarray(samples))
    rows = []
    for z in samples:
        h, c, v = homogeneity_completeness_v_measure(labels, z)
        rows.append(
            (
                v_beta(labels, z),
                v,
                h,
                c,
                variation_of_information(labels, z),
                pairwise_link_accuracy(labels, z),
                len(np.unique(z)),
            )
        )
    mean = np.mean(np.array(rows, dtype=np.float64), axis=0)
    return {**{k: float(m) for k, m in zip(METRICS, mean[:6], strict=True)}, "n_clusters": float(mean[6])}


def _clone(model: Any) -> Any:
    """An unfitted copy: scikit-learn's ``clone`` for its estimators, ``type(m)(**m.get_params())`` for other
    models with ``get_params`` (without importing scikit-learn), else a deep copy.
    """
    base = sys.modules.get("sklearn.base")
    if base is not None and isinstance(model, base.BaseEstimator):
        return base.clone(model)
    if hasattr(model, "get_params"):
        params = {k: copy.deepcopy(v) for k, v in model.get_params(deep=False).items()}
        return type(model)(**params)
    return copy.deepcopy(model)


class _Diverged(Exception):  # noqa: N818 - control flow: a replayed answer is not about the pair asked
    pass


_LN2 = float(np.log(2.0))


class ActiveLearner:
    """Active constraint selection around any model with the DPMM's ``fit``/``samples_`` interface.

    Parameters
    ----------
    model : estimator
        Duck-typed: ``fit(X, constraints=..., init_labels=..., n_burnin=...)`` setting ``samples_`` (S, n) and
        ``final_labels_`` (n_chains, n); e.g. :class:`jaxclust.DPMM`. It is cloned, never modified.
        ``init_labels``/``n_burnin`` are passed only for warm starts.
    oracle : callable or object with ``answer(i, j)``
        Returns ``"must"``, ``"cannot"`` or ``"unknown"``; may raise ``SessionStopped``.
    strategy : {"batch", "entropy", "naive_batch", "random"}
        See :mod:`jaxclust.active.selection`.
    batch_size : int
        Questions per refit.
    min_samples : int
        ``"batch"`` only: when fewer retained samples remain, new samples are drawn under the constraints
        chosen so far.
    random_state : int or None
        Seeds the random strategy. The model's fits are seeded ``model.random_state + 7919 * k`` for the k-th
        fit, so runs that differ only in strategy share their first fit.
    store : str, Path or AnswerStore, optional
        Durable answer log; a run on an existing store resumes it (see the module docstring): stored answers
        are never asked again, and with the same settings the session continues with exactly the questions an
        uninterrupted session would have asked.
    warm_start : bool
        Start each refit from the previous chains' final states (see the module docstring).
    warm_burnin : int or None
        Burn-in sweeps of a warm refit; default ``max(10, model.n_burnin // 5)`` (10 when the model's
        ``n_burnin`` is ``None``, i.e. its own default).
    block_size : int or None
        Row block of the entropy sweep.
    progress : bool
        Show a tqdm progress bar over questions.
    stop_entropy : float or None
        Confidence stop: when the highest link entropy (nats) among the pairs still unknown, under samples
        fitted to every answer so far, is below this value, the model is near-certain about every remaining
        pair and the session ends (``stop_reason_ == "confident"``) instead of asking obvious questions.
        ``None`` (default) never stops early. ``0.1`` nats means every unknown pair has a co-clustering
        probability below 0.021 or above 0.979.
    status : callable, optional
        Called with a one-line message before and after the first fit of :meth:`run` (which may take seconds
        while JAX compiles), e.g. ``print``.

    Attributes
    ----------
    history_ : list of dict
        As returned by :meth:`run`.
    constraints_ : Constraints
        The constraints kept at the end.
    model_ : estimator
        The last fitted model.
    dropped_ : list of (i, j, answer)
        Answers dropped as contradictory.
    unknown_ : list of (i, j)
        Pairs answered "don't know".
    stopped_ : bool
        True if the oracle ended the session early.
    stop_reason_ : str
        Why :meth:`run` returned: ``"done"`` (``n_queries`` answers), ``"stopped"`` (the oracle raised
        ``SessionStopped``), ``"confident"`` (see ``stop_entropy``) or ``"exhausted"`` (no unknown pair left).
    max_entropy_ : float or None
        Highest link entropy among unknown pairs when the session ended (None if not computed).
    """

    def __init__(
        self,
        model,
        oracle,
        strategy: str = "batch",
        batch_size: int = 1,
        min_samples: int = 10,
        random_state=0,
        store=None,
        warm_start: bool = True,
        warm_burnin: int | None = None,
        block_size: int | None = None,
        progress: bool = True,
        stop_entropy: float | None = None,
        status=None,
    ):
        self.model = model
        self.oracle = oracle
        self.strategy = strategy
        self.batch_size = batch_size
        self.min_samples = min_samples
        self.random_state = random_state
        self.store = store
        self.warm_start = warm_start
        self.warm_burnin = warm_burnin
        self.block_size = block_size
        self.progress = progress
        self.stop_entropy = stop_entropy
        self.status = status

    # --- helpers
    # ----------------------------------------------------------------------------------------------
    def _validate(self, n_queries: Any) -> None:
        if self.strategy not in STRATEGIES:
            raise InvalidInputError(f"strategy: expected one of {STRATEGIES}, got {self.strategy!r}")
        for name in ("batch_size", "min_samples"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
                raise InvalidInputError(f"{name}: expected a positive integer, got {v!r}")
        if isinstance(n_queries, bool) or not isinstance(n_queries, int | np.integer) or n_queries < 0:
            raise InvalidInputError(f"n_queries: expected a non-negative integer, got {n_queries!r}")
        if self.warm_burnin is not None and (
            not isinstance(self.warm_burnin, int | np.integer) or self.warm_burnin < 0
        ):
            raise InvalidInputError(
                f"warm_burnin: expected a non-negative integer or None, got {self.warm_burnin!r}"
            )
        t = self.stop_entropy
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, numbers.Real) or not 0.0 <= float(t) <= _LN2
        ):
            raise InvalidInputError(
                f"stop_entropy: expected None or a number of nats in [0, ln 2 = {_LN2:.4f}], got {t!r}"
            )
        if self.status is not None and not callable(self.status):
            raise InvalidInputError(f"status: expected a callable or None, got {self.status!r}")

    def _warm_burnin(self, model) -> int:
        burn = self.warm_burnin
        if burn is None:
            full = getattr(model, "n_burnin", None)  # None: the model picks its own (e.g. DPMM's defaults)
            burn = max(10, int(full if full is not None else 50) // 5)
        return int(burn)

    def _fit(self, model, X, constraints, seed: int, warm_from=None, n_burnin=None):
        """Fit ``model``; returns ``(samples, warm, n_burnin)`` (the burn-in override of a warm fit, else
        None).
        """
        if hasattr(model, "set_params") and "random_state" in model.get_params(deep=False):
            model.set_params(random_state=seed)
        kwargs: dict[str, Any] = {"constraints": constraints}
        warm = warm_from is not None and self.warm_start
        burn = None
        if warm:
            kwargs["init_labels"] = np.asarray(warm_from)
            burn = self._warm_burnin(model) if n_burnin is None else int(n_burnin)
            kwargs["n_burnin"] = burn
        model.fit(X, **kwargs)
        samples = np.asarray(model.samples_)
        if samples.ndim != 2 or samples.shape[1] != X.shape[0]:
            raise InvalidInputError(f"model: samples_ has shape {samples.shape}, expected (S, {X.shape[0]})")
        return samples, warm, burn

    def _settings(self, model, base_seed: int) -> str:
        """Digest of everything that shapes a session's questions; fit records are reused only when it
        matches.
        """
        params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
        desc = {
            "strategy": self.strategy,
            "batch_size": int(self.batch_size),
            "min_samples": int(self.min_samples),
            "random_state": repr(self.random_state),
            "warm_start": bool(self.warm_start),
            "warm_burnin": self._warm_burnin(model),
            "stop_entropy": None if self.stop_entropy is None else float(self.stop_entropy),
            "base_seed": int(base_seed),
            "model": type(model).__qualname__,
            "params": repr(sorted((k, v) for k, v in params.items() if k != "random_state")),
        }
        return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]

    def _resume_plan(self, answers: list[dict], fits: list[dict], settings: str, n: int):
        """The last fit of an interrupted session and its warm-start state, when the session can be
        continued exactly; else None (then every stored answer is applied and the model refitted from
        scratch).
        """
        if not fits:
            return None
        last = fits[-1]
        q = last["n_answers"]
        if last["settings"] != settings or q > len(answers):
            return None
        if self.strategy != "batch" and last["pos"] != 0:
            return None
        if any(r["round"] != last["round"] for r in answers[q:]):
            return None
        init = None
        if last["warm"]:
            prev = fits[-2]["final_labels"] if len(fits) >= 2 else None
            if prev is None or len(prev) == 0 or any(len(row) != n for row in prev):
                return None
            init = np.asarray(prev, dtype=np.int64)
        return last, init

    # --- the loop -------------------------------------------------------------------------------------------
    def run(self, X, n_queries: int, eval_labels=None, constraints: Constraints | None = None) -> list[dict]:
        """Ask up to ``n_queries`` questions, refitting after every ``batch_size`` of them.

        Parameters
        ----------
        X : array-like, shape (n, d)
        n_queries : int
            Total questions, answers replayed from the store included.
        eval_labels : array-like of int, shape (n,), optional
            Gold labels used only to score each round (never shown to the selection).
        constraints : Constraints, optional
            Initial constraints (re-read with ``on_conflict="drop"``).

        Returns
        -------
        list of dict
            One dict per round; the first is the fit before any new question (its ``queries`` are the
            answers replayed from the store, if any). Keys: ``round``, ``n_queries`` (answered so far),
            ``n_constraints`` (kept), ``n_unknown``, ``n_dropped``, ``queries`` (this round's
            ``[i, j, answer]``), ``dropped`` (this round's dropped ``[i, j, answer]``), ``n_refits``
            (model fits this round), ``seconds`` (wall time of the round: fits, selection and the oracle's
            answers) and, with ``eval_labels``, ``v_beta``, ``v_measure``, ``homogeneity``,
            ``completeness``, ``vi``, ``link_accuracy``, ``n_clusters``, each averaged over the model's
            samples.
        """
        self._validate(n_queries)
        X = check_array(X, name="X", min_rows=2)
        n = X.shape[0]
        labels = None if eval_labels is None else check_labels(eval_labels, n=n, name="eval_labels")
        if constraints is not None and constraints.n != n:
            raise InvalidInputError(f"constraints: built for {constraints.n} items, X has {n} rows")
        meta = {"n": n, "fingerprint": data_fingerprint(X)}
        store, own_store = self.store, False
        if store is not None and not isinstance(store, AnswerStore):
            store, own_store = AnswerStore(store, meta=meta), True
        try:
            if store is not None and not own_store:
                store.check_meta(meta)
            return self._run(X, int(n_queries), labels, constraints, store)
        finally:
            if own_store:
                store.close()

    def _run(self, X, n_queries: int, labels, constraints, store) -> list[dict]:
        n = X.shape[0]
        key = prng_key(self.random_state)
        # the model's draws follow the model's own seed (so runs that differ only in the selection strategy
        # share their first fit); the learner's random_state drives the random strategy
        model_rs = (
            self.model.get_params(deep=False).get("random_state")
            if hasattr(self.model, "get_params")
            else None
        )
        base_seed = seed_from(model_rs) if isinstance(model_rs, int | np.integer | None) else 0
        cons = Constraints.from_pairs(
            n, constraints.pairs if constraints is not None else (), on_conflict="drop"
        )
        model = _clone(self.model)
        settings = self._settings(model, base_seed)
        stored = store.records if store is not None else []
        plan = self._resume_plan(stored, store.fits, settings, n) if store is not None else None

        unknown: set[tuple[int, int]] = set()
        dropped_all: list[tuple[int, int, str]] = []
        st: dict[str, Any] = {"cons": cons, "asked": 0, "n_fits": 0, "samples": None}

        def apply(i: int, j: int, answer: str, record: bool, round_: int, round_log: dict) -> bool:
            """Add an answer; returns whether it changed the constraints."""
            a, b = min(i, j), max(i, j)
            kept, changed = True, False
            if answer == "unknown":
                unknown.add((a, b))
            else:
                new = st["cons"].with_constraint(a, b, answer == "must")
                kept = len(new.dropped) == len(st["cons"].dropped)
                changed = kept
                st["cons"] = new
                if not kept:
                    dropped_all.append((a, b, answer))
                    round_log["dropped"].append([a, b, answer])
            if record and store is not None:
                store.append(a, b, answer, kept=kept, round=round_)
            st["asked"] += 1
            round_log["queries"].append([a, b, answer])
            return changed

        def fit(round_use: int, pos: int, record: bool = True, seed=None, warm_from=None, n_burnin=None):
            """One model fit; recorded in the store (before any question uses it) unless ``record`` is
            False.
            """
            if seed is None:
                seed = base_seed + 7919 * st["n_fits"]
                warm_from = getattr(model, "final_labels_", None) if st["samples"] is not None else None
            samples, warm, burn = self._fit(
                model, X, st["cons"], seed, warm_from=warm_from, n_burnin=n_burnin
            )
            st["samples"] = samples
            if record and store is not None:
                final = getattr(model, "final_labels_", None)
                store.append_fit(
                    {
                        "n_fit": st["n_fits"],
                        "seed": int(seed),
                        "n_answers": st["asked"],
                        "round": int(round_use),
                        "pos": int(pos),
                        "warm": bool(warm),
                        "n_burnin": burn,
                        "settings": settings,
                        "final_labels": None if final is None else np.asarray(final).astype(int).tolist(),
                    }
                )
            if record:
                st["n_fits"] += 1
            return samples

        replay_log: dict = {"queries": [], "dropped": []}
        pending: collections.deque = collections.deque()
        t0 = time.perf_counter()
        if self.status is not None:
            self.status(
                f"Fitting the model to {n} items"
                + (f" ({len(stored)} stored answers)" if stored else "")
                + " - the first fit also compiles, this can take a while..."
            )
        if plan is None:
            for rec in stored:
                apply(rec["i"], rec["j"], rec["answer"], False, rec["round"], replay_log)
            round_ = max((r["round"] for r in stored), default=0) + 1
            pos = 0
            fit(round_, 0)
        else:
            last, init = plan
            q = last["n_answers"]
            for rec in stored[:q]:
                apply(rec["i"], rec["j"], rec["answer"], False, rec["round"], replay_log)
            pending.extend(stored[q:])
            st["n_fits"] = last["n_fit"]
            fit(
                last["round"],
                last["pos"],
                record=False,
                seed=last["seed"],
                warm_from=init,
                n_burnin=last["n_burnin"],
            )
            st["n_fits"] = last["n_fit"] + 1
            final = getattr(model, "final_labels_", None)
            if last["final_labels"] is not None and (
                final is None or not np.array_equal(np.asarray(final), np.asarray(last["final_labels"]))
            ):
                warnings.warn(
                    f"resuming {store.path}: the refit of the last model did not reproduce the stored chain states "
                    "(another JAX version or machine?); no answer is lost, but the next questions may differ "
                    "from those of an uninterrupted session",
                    JaxclustWarning,
                    stacklevel=3,
                )
            round_, pos = last["round"], last["pos"]
        if self.strategy == "random":  # the key of round r is the r-th split, however the session was resumed
            for _ in range(round_ - 1):
                key, _sub = _split(key)
        if self.status is not None:
            self.status(f"Model ready ({time.perf_counter() - t0:.1f} s).")

        history: list[dict] = []

        def record_round(round_: int, log: dict, n_refits: int, seconds: float) -> None:
            entry = {
                "round": round_,
                "n_queries": st["asked"],
                "n_constraints": len(st["cons"]),
                "n_unknown": len(unknown),
                "n_dropped": len(dropped_all),
                "queries": log["queries"],
                "dropped": log["dropped"],
                "n_refits": n_refits,
                "seconds": seconds,
            }
            if labels is not None:
                entry.update(score_samples(st["samples"], labels))
            history.append(entry)

        record_round(0, replay_log, 1, time.perf_counter() - t0)

        def next_answer(i: int, j: int) -> tuple[str, bool]:
            if pending:
                rec = pending[0]
                if (rec["i"], rec["j"]) != (min(i, j), max(i, j)):
                    raise _Diverged
                pending.popleft()
                return rec["answer"], True
            return ask(self.oracle, i, j), False

        def top_entropy(weights=None) -> float | None:
            best = top_entropy_pairs(st["samples"], 1, st["cons"], weights, unknown, self.block_size)
            return best[0][2] if best else None

        stop = None if self.stop_entropy is None else float(self.stop_entropy)
        pbar = None
        if self.progress:
            from tqdm.auto import tqdm

            pbar = tqdm(
                total=int(n_queries),
                initial=min(st["asked"], int(n_queries)),
                desc="queries",
                unit="q",
                leave=False,
            )
        self.stopped_ = False
        self.max_entropy_ = None
        reason = "done"
        log: dict = {"queries": [], "dropped": []}
        t0 = time.perf_counter()
        try:
            while True:
                start_asked = st["asked"] - pos  # answers before this round (pos > 0 only when resuming)
                if start_asked >= n_queries:
                    break
                t0 = time.perf_counter()
                log = {"queries": [], "dropped": []}
                budget = min(int(self.batch_size), n_queries - start_asked)
                n_refits = 0
                shown = st["asked"]
                confident = False
                try:
                    if self.strategy == "batch":
                        weights = np.ones(st["samples"].shape[0], np.float32)
                        fresh, changed = True, False  # samples just fitted / answers changed them since
                        b = pos
                        while b < budget:
                            if not fresh and weights.sum() < self.min_samples:  # too few agree: draw new ones
                                fit(round_, b)
                                n_refits += 1
                                weights = np.ones(st["samples"].shape[0], np.float32)
                                fresh, changed = True, False
                            best = top_entropy_pairs(
                                st["samples"], 1, st["cons"], weights, unknown, self.block_size
                            )
                            if stop is not None and best and best[0][2] < stop and not pending:
                                if changed:  # judge confidence on samples that saw every answer
                                    fit(round_, b)
                                    n_refits += 1
                                    weights = np.ones(st["samples"].shape[0], np.float32)
                                    fresh, changed = True, False
                                    best = top_entropy_pairs(
                                        st["samples"], 1, st["cons"], None, unknown, self.block_size
                                    )
                                if best and best[0][2] < stop:
                                    self.max_entropy_ = best[0][2]
                                    confident = True
                                    break
                            if not best:
                                break
                            i, j, _ = best[0]
                            answer, replayed = next_answer(i, j)
                            changed_now = apply(i, j, answer, not replayed, round_, log)
                            changed = changed or changed_now
                            fresh = False
                            if answer != "unknown":
                                weights = weights * np.asarray(
                                    agreeing_samples(st["samples"], i, j, answer == "must")
                                )
                            b += 1
                    else:
                        if self.strategy == "random":
                            key, sub = _split(key)
                            pairs = random_pairs(sub, n, budget, st["cons"], unknown)
                            h_max = top_entropy() if stop is not None and not pending else None
                        else:
                            top = top_entropy_pairs(
                                st["samples"], budget, st["cons"], None, unknown, self.block_size
                            )
                            pairs = [(i, j) for i, j, _ in top]
                            h_max = top[0][2] if top else None
                        if stop is not None and not pending and h_max is not None and h_max < stop:
                            self.max_entropy_ = h_max
                            confident = True
                            pairs = []
                        for i, j in pairs:
                            # skip pairs implied by an earlier answer of this batch
                            if st["cons"].status(i, j) is not None:
                                continue
                            answer, replayed = next_answer(i, j)
                            apply(i, j, answer, not replayed, round_, log)
                except _Diverged:
                    warnings.warn(
                        f"resuming {store.path}: a stored answer is not about the pair this session would ask "
                        "now; every stored answer is kept and the model is refitted with all of them",
                        JaxclustWarning,
                        stacklevel=3,
                    )
                while pending:  # answers of the interrupted round not reached again: keep every one
                    rec = pending.popleft()
                    apply(rec["i"], rec["j"], rec["answer"], False, round_, log)
                if pbar is not None:
                    pbar.update(st["asked"] - shown)
                pos = 0
                if confident or st["asked"] == start_asked:  # nothing asked: confident, or nothing left
                    if log["queries"] or n_refits:
                        record_round(round_, log, n_refits, time.perf_counter() - t0)
                    reason = "confident" if confident else "exhausted"
                    break
                fit(round_ + 1, 0)
                record_round(round_, log, n_refits + 1, time.perf_counter() - t0)
                round_ += 1
        except SessionStopped:
            self.stopped_ = True
            reason = "stopped"
            # answers of the unfinished round are stored; refit so that the history reflects them (this fit is
            # not recorded: a resumed session continues from the last recorded one, as an uninterrupted would)
            if log["queries"]:
                fit(round_, 0, record=False)
                record_round(round_, log, 1, time.perf_counter() - t0)
        finally:
            if pbar is not None:
                pbar.close()

        self.stop_reason_ = reason
        self.history_ = history
        self.constraints_ = st["cons"]
        self.model_ = model
        self.dropped_ = dropped_all
        self.unknown_ = sorted(unknown)
        return history


def _split(key):
    import jax

    key, sub = jax.random.split(key)
    return key, sub
