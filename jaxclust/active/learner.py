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
"""

from __future__ import annotations

import copy
import hashlib
import time
from typing import Any

import numpy as np

from jaxclust.active.entropy import agreeing_samples, top_entropy_pairs
from jaxclust.active.oracles import SessionStopped, ask
from jaxclust.active.selection import STRATEGIES, random_pairs
from jaxclust.active.store import AnswerStore
from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError
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
    if hasattr(model, "get_params"):
        from sklearn.base import clone

        return clone(model)
    return copy.deepcopy(model)


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
        Durable answer log; a run on an existing store replays its answers first and asks only new questions.
    warm_start : bool
        Start each refit from the previous chains' final states (see the module docstring).
    warm_burnin : int or None
        Burn-in sweeps of a warm refit; default ``max(10, model.n_burnin // 5)``.
    block_size : int or None
        Row block of the entropy sweep.
    progress : bool
        Show a tqdm progress bar over questions.

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

    def _fit(self, model, X, constraints, seed: int, warm_from=None):
        if hasattr(model, "set_params") and "random_state" in model.get_params(deep=False):
            model.set_params(random_state=seed)
        kwargs: dict[str, Any] = {"constraints": constraints}
        if warm_from is not None and self.warm_start:
            kwargs["init_labels"] = np.asarray(warm_from)
            burn = self.warm_burnin
            if burn is None:
                burn = max(10, int(getattr(model, "n_burnin", 50)) // 5)
            kwargs["n_burnin"] = int(burn)
        model.fit(X, **kwargs)
        samples = np.asarray(model.samples_)
        if samples.ndim != 2 or samples.shape[1] != X.shape[0]:
            raise InvalidInputError(f"model: samples_ has shape {samples.shape}, expected (S, {X.shape[0]})")
        return samples

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
        key = prng_key(self.random_state)
        # the model's draws follow the model's own seed (so runs that differ only in the selection strategy
        # share their first fit); the learner's random_state drives the random strategy
        model_rs = (
            self.model.get_params(deep=False).get("random_state")
            if hasattr(self.model, "get_params")
            else None
        )
        base_seed = seed_from(model_rs) if isinstance(model_rs, int | np.integer | None) else 0
        if constraints is not None and constraints.n != n:
            raise InvalidInputError(f"constraints: built for {constraints.n} items, X has {n} rows")
        cons = Constraints.from_pairs(
            n, constraints.pairs if constraints is not None else (), on_conflict="drop"
        )

        store = self.store
        own_store = False
        if store is not None and not isinstance(store, AnswerStore):
            store = AnswerStore(store, meta={"n": n, "fingerprint": data_fingerprint(X)})
            own_store = True

        unknown: set[tuple[int, int]] = set()
        dropped_all: list[tuple[int, int, str]] = []
        state = {"cons": cons, "asked": 0}

        def apply(i: int, j: int, answer: str, record: bool, round_: int, round_log: dict) -> None:
            a, b = min(i, j), max(i, j)
            kept = True
            if answer == "unknown":
                unknown.add((a, b))
            else:
                new = state["cons"].with_constraint(a, b, answer == "must")
                kept = len(new.dropped) == len(state["cons"].dropped)
                state["cons"] = new
                if not kept:
                    dropped_all.append((a, b, answer))
                    round_log["dropped"].append([a, b, answer])
            if record and store is not None:
                store.append(a, b, answer, kept=kept, round=round_)
            state["asked"] += 1
            round_log["queries"].append([a, b, answer])

        replay_log = {"queries": [], "dropped": []}
        if store is not None:
            for rec in store.records:
                apply(rec["i"], rec["j"], rec["answer"], False, rec["round"], replay_log)

        model = _clone(self.model)
        history: list[dict] = []
        t0 = time.perf_counter()
        samples = self._fit(model, X, state["cons"], base_seed)
        n_fits = 1

        def record_round(round_: int, log: dict, n_refits: int, seconds: float) -> None:
            entry = {
                "round": round_,
                "n_queries": state["asked"],
                "n_constraints": len(state["cons"]),
                "n_unknown": len(unknown),
                "n_dropped": len(dropped_all),
                "queries": log["queries"],
                "dropped": log["dropped"],
                "n_refits": n_refits,
                "seconds": seconds,
            }
            if labels is not None:
                entry.update(score_samples(samples, labels))
            history.append(entry)

        record_round(0, replay_log, 1, time.perf_counter() - t0)
        pbar = None
        if self.progress:
            from tqdm.auto import tqdm

            pbar = tqdm(
                total=int(n_queries),
                initial=min(state["asked"], int(n_queries)),
                desc="queries",
                unit="q",
                leave=False,
            )
        self.stopped_ = False
        round_ = max((r["round"] for r in store.records), default=0) if store is not None else 0
        log: dict = {"queries": [], "dropped": []}
        t0 = time.perf_counter()
        try:
            while state["asked"] < n_queries:
                round_ += 1
                t0 = time.perf_counter()
                log = {"queries": [], "dropped": []}
                budget = min(int(self.batch_size), int(n_queries) - state["asked"])
                n_refits = 0
                before = state["asked"]
                if self.strategy == "batch":
                    weights = np.ones(samples.shape[0], np.float32)
                    for b in range(budget):
                        if b > 0 and weights.sum() < self.min_samples:  # too few samples agree: draw new ones
                            samples = self._fit(
                                model,
                                X,
                                state["cons"],
                                base_seed + 7919 * n_fits,
                                warm_from=getattr(model, "final_labels_", None),
                            )
                            n_fits += 1
                            n_refits += 1
                            weights = np.ones(samples.shape[0], np.float32)
                        best = top_entropy_pairs(samples, 1, state["cons"], weights, unknown, self.block_size)
                        if not best:
                            break
                        i, j, _ = best[0]
                        answer = ask(self.oracle, i, j)
                        apply(i, j, answer, True, round_, log)
                        if answer != "unknown":
                            weights = weights * np.asarray(agreeing_samples(samples, i, j, answer == "must"))
                else:
                    if self.strategy == "random":
                        key, sub = _split(key)
                        pairs = random_pairs(sub, n, budget, state["cons"], unknown)
                    else:
                        pairs = [
                            (i, j)
                            for i, j, _ in top_entropy_pairs(
                                samples, budget, state["cons"], None, unknown, self.block_size
                            )
                        ]
                    for i, j in pairs:
                        # skip pairs implied by an earlier answer of this batch
                        if state["cons"].status(i, j) is not None:
                            continue
                        answer = ask(self.oracle, i, j)
                        apply(i, j, answer, True, round_, log)
                if pbar is not None:
                    pbar.update(state["asked"] - before)
                if state["asked"] == before:  # every pair is known or excluded: nothing left to ask
                    break
                samples = self._fit(
                    model,
                    X,
                    state["cons"],
                    base_seed + 7919 * n_fits,
                    warm_from=getattr(model, "final_labels_", None),
                )
                n_fits += 1
                record_round(round_, log, n_refits + 1, time.perf_counter() - t0)
        except SessionStopped:
            self.stopped_ = True
            # answers of the unfinished round are stored; refit so that the history reflects them
            if log["queries"]:
                samples = self._fit(
                    model,
                    X,
                    state["cons"],
                    base_seed + 7919 * n_fits,
                    warm_from=getattr(model, "final_labels_", None),
                )
                record_round(round_, log, 1, time.perf_counter() - t0)
        finally:
            if pbar is not None:
                pbar.close()
            if own_store:
                store.close()

        self.history_ = history
        self.constraints_ = state["cons"]
        self.model_ = model
        self.dropped_ = dropped_all
        self.unknown_ = sorted(unknown)
        return history


def _split(key):
    import jax

    key, sub = jax.random.split(key)
    return key, sub
