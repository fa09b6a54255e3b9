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
contradicts the constraints kept so far (possible with noisy people and pre-chosen batches, two annotators, or
user-supplied initial constraints) is dropped, recorded in the store with ``kept=False`` and reported in the
round's ``dropped`` list and in ``conflicts_``, which names the earlier answers it contradicts and who gave
them; the session never crashes on a conflict. Every answer, kept or not, with its annotator, is in
``answers_`` (the hook for models of fallible annotators). Before each question in a batch the pair's status is
re-checked, so pairs made known by earlier answers of the same batch are skipped, not asked.

Answers pushed in. :meth:`ActiveLearner.run` calls an oracle; :meth:`ActiveLearner.iter_questions` is the same
session as a generator, for callers that receive answers (a notebook widget): ``next()`` gives a question,
``send(answer)`` stores it and gives the next.

Undo. An answer undone in the store (:meth:`AnswerStore.undo`, an undo record) is left out of the answers a
session reads, and so are the fit records made after it: a resumed session refits the last fit made before the
undone answer and goes on exactly as a session that never got it.

Several annotators. On a shared store (``AnswerStore(path, shared=True)``) the session claims each question
before asking it (a question another live session holds is skipped), takes in the other annotators' answers
before each pick (they filter the batch's samples as its own answers do; an answer another session undid makes
it rebuild its constraints and refit), and counts ``n_queries`` over everybody's answers. There is no single
uninterrupted session to reproduce, so a shared session starts from every stored answer and a fresh fit.

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
from collections.abc import Mapping
from typing import Any

import numpy as np

from jaxclust.active.entropy import agreeing_samples, top_entropy_pairs
from jaxclust.active.oracles import SessionStopped, ask, check_reply
from jaxclust.active.selection import STRATEGIES, random_pairs
from jaxclust.active.store import AnswerStore, check_annotator, default_annotator
from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError, JaxclustWarning
from jaxclust.validation import check_array, check_labels, prng_key, seed_from

__all__ = ["ActiveLearner", "score_samples", "data_fingerprint", "describe_conflict"]

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
    annotator : str or None
        Who answers: stored with every new answer (default: the operating-system user name).
    error_rate : float or dict
        How often an answer is wrong. 0 (default): every answer is a hard constraint, and an answer that
        contradicts earlier ones is dropped (recorded, and reported in ``conflicts_``). In ``(0, 1/2]``: every
        answer is an observation wrong with this probability (:meth:`jaxclust.Constraints.with_answer`): it
        weighs the posterior instead of fixing it, contradicting answers are all kept as evidence, and in the
        batch method a sample that disagrees with an answer keeps weight ``eps / (1 - eps)`` instead of 0. A
        dict gives a rate per annotator (``{"alice": 0.05, "bob": 0.2}``; the key ``"*"`` covers everyone
        else).

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
    conflicts_ : list of dict
        One per dropped answer: ``{"answer": {...}, "contradicts": [{...}, ...], "message": str}``, each
        answer as ``number`` (its place among the session's answers, 1-based; None for an initial
        constraint), ``i``, ``j``, ``answer`` and ``annotator``; ``message`` names them all in one line.
    answers_ : list of dict
        Every answer the session used, stored or new, in order: ``i``, ``j``, ``answer``, ``annotator`` and
        ``kept`` (False when dropped as contradictory). The hook for models of fallible annotators: all the
        answers, with who gave them, whatever became a constraint.
    unknown_ : list of (i, j)
        Pairs answered "don't know".
    stopped_ : bool
        True if the oracle ended the session early.
    stop_reason_ : str
        Why :meth:`run` returned: ``"done"`` (``n_queries`` answers), ``"stopped"`` (the oracle raised
        ``SessionStopped``), ``"confident"`` (see ``stop_entropy``), ``"exhausted"`` (no unknown pair left)
        or ``"closed"`` (an :meth:`iter_questions` generator closed by its caller).
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
        annotator: str | None = None,
        error_rate=0.0,
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
        self.annotator = annotator
        self.error_rate = error_rate

    # --- helpers
    # ----------------------------------------------------------------------------------------------
    def _rate_of(self, who: str | None) -> float:
        """The error rate of an answer by ``who`` (see ``error_rate``)."""
        rates = self.error_rate
        if isinstance(rates, Mapping):
            if who in rates:
                return float(rates[who])
            if "*" in rates:
                return float(rates["*"])
            raise InvalidInputError(
                f"error_rate: no rate for annotator {who!r} (give one, or a '*' entry for everyone else)"
            )
        return float(rates)

    def _validate(self, n_queries: Any) -> None:
        rates = self.error_rate
        values = list(rates.values()) if isinstance(rates, Mapping) else [rates]
        for v in values:
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float | np.integer | np.floating)
                or not (0.0 <= float(v) <= 0.5)
            ):
                raise InvalidInputError(
                    f"error_rate: expected a probability in [0, 0.5] (or a dict of them per annotator), got {v!r}"
                )
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
            "error_rate": self.error_rate if isinstance(self.error_rate, Mapping) else float(self.error_rate),
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
            Total questions, answers replayed from the store included (with a shared store: the answers of
            every annotator).
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
        session = self.iter_questions(X, n_queries, eval_labels, constraints)
        try:
            pair = next(session)
            while True:
                try:
                    reply = ask(self.oracle, *pair)
                except SessionStopped as exc:
                    pair = session.throw(exc)
                else:
                    pair = session.send(reply)
        except StopIteration as end:
            return end.value
        finally:
            session.close()

    def iter_questions(self, X, n_queries: int, eval_labels=None, constraints: Constraints | None = None):
        """The session of :meth:`run` as a generator, for callers that receive answers rather than call an
        oracle (a notebook widget, a web form): ``next()`` gives the first question ``(i, j)``, ``send(answer)``
        stores the answer (``"must"``, ``"cannot"`` or ``"unknown"``) and gives the next question; when the
        session ends the generator returns the history (``StopIteration.value``, as :meth:`run` returns it).
        ``throw(SessionStopped())`` ends it as a person who quits (the round is refitted for the history);
        ``close()`` ends it at once. An answer that is none of the three raises ``InvalidInputError`` and ends
        the generator (check replies before sending them; everything stored so far stays). Every answer is
        stored before the next question, as in :meth:`run`, and the attributes (``model_``, ``history_``,
        ``constraints_``, ...) follow the session while it runs.

        The arguments are checked when this is called; the store is opened at the first ``next()``.
        """
        self._validate(n_queries)
        X = check_array(X, name="X", min_rows=2)
        n = X.shape[0]
        labels = None if eval_labels is None else check_labels(eval_labels, n=n, name="eval_labels")
        if constraints is not None and constraints.n != n:
            raise InvalidInputError(f"constraints: built for {constraints.n} items, X has {n} rows")
        annotator = check_annotator(self.annotator) or default_annotator()
        return self._session(X, int(n_queries), labels, constraints, annotator)

    def _session(self, X, n_queries: int, labels, constraints, annotator: str):
        meta = {"n": X.shape[0], "fingerprint": data_fingerprint(X)}
        store, own_store = self.store, False
        if store is not None and not isinstance(store, AnswerStore):
            store, own_store = AnswerStore(store, meta=meta), True
        try:
            if store is not None and not own_store:
                store.check_meta(meta)
            return (yield from self._run(X, n_queries, labels, constraints, store, annotator))
        finally:
            if own_store:
                store.close()

    def _run(self, X, n_queries: int, labels, constraints, store, annotator: str):
        n = X.shape[0]
        key = prng_key(self.random_state)
        shared = store is not None and store.shared
        # the model's draws follow the model's own seed (so runs that differ only in the selection strategy
        # share their first fit); the learner's random_state drives the random strategy
        model_rs = (
            self.model.get_params(deep=False).get("random_state")
            if hasattr(self.model, "get_params")
            else None
        )
        base_seed = seed_from(model_rs) if isinstance(model_rs, int | np.integer | None) else 0
        # the hard pairs are re-read with on_conflict="drop"; answers with an error rate are kept as they are
        initial = Constraints.from_answers(
            n,
            list(constraints.pairs) + list(constraints.answers) if constraints is not None else (),
            on_conflict="drop",
        )
        model = _clone(self.model)
        settings = self._settings(model, base_seed)
        if store is not None and shared:
            store.refresh()  # from here on, refresh() reports only what the others add
        stored = store.records if store is not None else []
        # several annotators: no single session to reproduce; every stored answer is applied and refitted
        plan = None if store is None or shared else self._resume_plan(stored, store.fits, settings, n)

        unknown: set[tuple[int, int]] = set()
        # pairs answered with an error rate (never asked again; not implied by the constraints)
        soft: set[tuple[int, int]] = {(min(i, j), max(i, j)) for i, j, _, _ in initial.answers}
        taken: set[tuple[int, int]] = set()  # pairs claimed by other annotators' sessions
        dropped_all: list[tuple[int, int, str]] = []
        conflicts: list[dict] = []
        answers: list[dict] = []
        st: dict[str, Any] = {"cons": initial, "asked": 0, "n_fits": 0, "samples": None, "stale": False}
        graph = _KeptAnswers(initial)

        history: list[dict] = []
        self.model_, self.history_, self.answers_, self.conflicts_ = model, history, answers, conflicts
        self.stopped_ = False
        self.max_entropy_ = None

        def publish() -> None:
            self.constraints_ = st["cons"]
            self.dropped_ = list(dropped_all)
            self.unknown_ = sorted(unknown)

        def apply(rec: dict, record: bool, round_: int, round_log: dict | None) -> bool:
            """Add an answer (a record: i, j, answer, annotator); returns whether it changed the constraints."""
            a, b, answer = min(rec["i"], rec["j"]), max(rec["i"], rec["j"]), rec["answer"]
            who = rec.get("annotator")
            kept, changed = True, False
            number = len(answers) + 1
            if answer == "unknown":
                unknown.add((a, b))
            elif self._rate_of(who) > 0:  # an observation: never dropped, never contradicts
                st["cons"] = st["cons"].with_answer(a, b, answer == "must", self._rate_of(who))
                soft.add((a, b))
                changed = True
            else:
                new = st["cons"].with_constraint(a, b, answer == "must")
                kept = len(new.dropped) == len(st["cons"].dropped)
                changed = kept
                if not kept:
                    dropped_all.append((a, b, answer))
                    if round_log is not None:
                        round_log["dropped"].append([a, b, answer])
                    conflicts.append(graph.explain(st["cons"], a, b, answer, who, number))
                else:
                    graph.add(a, b, answer == "must", who, number)
                st["cons"] = new
            if record and store is not None:
                store.append(a, b, answer, kept=kept, round=round_, annotator=who)
            answers.append({"i": a, "j": b, "answer": answer, "annotator": who, "kept": kept})
            st["asked"] += 1
            if round_log is not None:
                round_log["queries"].append([a, b, answer])
            return changed

        def rebuild() -> None:
            """Another annotator undid an answer: rebuild the constraints from the answers in effect."""
            st["cons"], st["asked"] = initial, 0
            unknown.clear()
            soft.clear()
            soft.update((min(i, j), max(i, j)) for i, j, _, _ in initial.answers)
            dropped_all.clear()
            conflicts.clear()
            answers.clear()
            graph.reset(initial)
            for rec in store.records:
                apply(rec, False, 0, None)
            st["stale"] = True  # the samples were drawn under the undone answer: refit before the next pick

        def sync() -> list[dict]:
            """Shared store: take in the answers the other annotators stored since the last look."""
            if not shared:
                return []
            update = store.refresh()
            if update.undone:
                rebuild()
                return []
            for rec in update.answers:
                apply(rec, False, 0, None)
            return update.answers

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
            st["samples"], st["stale"] = samples, False
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
                        # a shared session is never resumed from its fits: mark them so none is reused
                        "settings": "shared" if shared else settings,
                        "final_labels": None
                        if final is None or shared
                        else np.asarray(final).astype(int).tolist(),
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
                apply(rec, False, rec["round"], replay_log)
            round_ = max((r["round"] for r in stored), default=0) + 1
            pos = 0
            fit(round_, 0)
        else:
            last, init = plan
            q = last["n_answers"]
            for rec in stored[:q]:
                apply(rec, False, rec["round"], replay_log)
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

        def replayed_answer(i: int, j: int) -> dict:
            rec = pending[0]
            if (rec["i"], rec["j"]) != (min(i, j), max(i, j)):
                raise _Diverged
            return pending.popleft()

        def excluded() -> set[tuple[int, int]]:
            return unknown | taken | soft if (taken or soft) else unknown

        def agreement(samples, rec) -> np.ndarray:
            """Importance weight of each sample given an answer: 1 where it agrees, 0 (hard answer) or
            eps / (1 - eps) (an answer wrong with probability eps) where it does not."""
            agree = np.asarray(agreeing_samples(samples, rec["i"], rec["j"], rec["answer"] == "must"))
            eps = self._rate_of(rec.get("annotator"))
            return np.where(agree, 1.0, eps / (1.0 - eps)).astype(np.float32)

        def top_entropy(weights=None) -> float | None:
            best = top_entropy_pairs(st["samples"], 1, st["cons"], weights, excluded(), self.block_size)
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
                st["round_answers"] = pos  # this session's answers in the round (others' are not counted)
                confident = False
                taken.clear()
                try:
                    if self.strategy == "batch":
                        weights = np.ones(st["samples"].shape[0], np.float32)
                        fresh, changed = True, False  # samples just fitted / answers changed them since
                        b = pos
                        while b < budget:
                            for rec in sync():  # other annotators' answers filter the samples as ours do
                                if rec["answer"] != "unknown":
                                    weights = weights * agreement(st["samples"], rec)
                                fresh, changed = False, True
                            if shared and st["asked"] >= n_queries:
                                break
                            if st["stale"] or (not fresh and weights.sum() < self.min_samples):
                                fit(round_, b)  # too few samples agree (or they are stale): draw new ones
                                n_refits += 1
                                weights = np.ones(st["samples"].shape[0], np.float32)
                                fresh, changed = True, False
                            best = top_entropy_pairs(
                                st["samples"], 1, st["cons"], weights, excluded(), self.block_size
                            )
                            if stop is not None and best and best[0][2] < stop and not pending:
                                if changed:  # judge confidence on samples that saw every answer
                                    fit(round_, b)
                                    n_refits += 1
                                    weights = np.ones(st["samples"].shape[0], np.float32)
                                    fresh, changed = True, False
                                    best = top_entropy_pairs(
                                        st["samples"], 1, st["cons"], None, excluded(), self.block_size
                                    )
                                if best and best[0][2] < stop:
                                    self.max_entropy_ = best[0][2]
                                    confident = True
                                    break
                            if not best:
                                break
                            i, j, _ = best[0]
                            if pending:
                                rec, replayed = replayed_answer(i, j), True
                            else:
                                if not store_claim(store, shared, i, j, annotator):
                                    taken.add((min(i, j), max(i, j)))
                                    continue
                                publish()
                                reply = yield (i, j)
                                rec = {
                                    "i": i,
                                    "j": j,
                                    "answer": check_reply(reply, i, j),
                                    "annotator": annotator,
                                }
                                replayed = False
                            changed_now = apply(rec, not replayed, round_, log)
                            st["round_answers"] += 1
                            changed = changed or changed_now
                            fresh = False
                            if rec["answer"] != "unknown":
                                weights = weights * agreement(st["samples"], rec)
                            b += 1
                    else:
                        if self.strategy == "random":
                            key, sub = _split(key)
                            pairs = random_pairs(sub, n, budget, st["cons"], excluded())
                            h_max = top_entropy() if stop is not None and not pending else None
                        else:
                            top = top_entropy_pairs(
                                st["samples"], budget, st["cons"], None, excluded(), self.block_size
                            )
                            pairs = [(i, j) for i, j, _ in top]
                            h_max = top[0][2] if top else None
                        if stop is not None and not pending and h_max is not None and h_max < stop:
                            self.max_entropy_ = h_max
                            confident = True
                            pairs = []
                        for i, j in pairs:
                            sync()
                            # skip pairs implied by an earlier answer of this batch (or another annotator's)
                            if st["cons"].status(i, j) is not None or (min(i, j), max(i, j)) in excluded():
                                continue
                            if shared and st["asked"] >= n_queries:
                                break
                            if pending:
                                rec, replayed = replayed_answer(i, j), True
                            else:
                                if not store_claim(store, shared, i, j, annotator):
                                    continue
                                publish()
                                reply = yield (i, j)
                                rec = {
                                    "i": i,
                                    "j": j,
                                    "answer": check_reply(reply, i, j),
                                    "annotator": annotator,
                                }
                                replayed = False
                            apply(rec, not replayed, round_, log)
                            st["round_answers"] += 1
                except _Diverged:
                    warnings.warn(
                        f"resuming {store.path}: a stored answer is not about the pair this session would ask "
                        "now; every stored answer is kept and the model is refitted with all of them",
                        JaxclustWarning,
                        stacklevel=3,
                    )
                while pending:  # answers of the interrupted round not reached again: keep every one
                    apply(pending.popleft(), False, round_, log)
                    st["round_answers"] += 1
                if pbar is not None:
                    pbar.update(st["asked"] - shown)
                pos = 0
                if confident or st["round_answers"] == 0:  # nothing asked: confident, or nothing left
                    if log["queries"] or n_refits:
                        record_round(round_, log, n_refits, time.perf_counter() - t0)
                    reason = "confident" if confident else "exhausted"
                    break
                fit(round_ + 1, 0)
                record_round(round_, log, n_refits + 1, time.perf_counter() - t0)
                round_ += 1
        except GeneratorExit:  # closed by the caller (e.g. to undo an answer): nothing more to do
            reason = "closed"
            raise
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
            publish()
            self.stop_reason_ = reason

        self.stop_reason_ = reason
        return history


def store_claim(store, shared: bool, i: int, j: int, annotator: str) -> bool:
    """Claim the question for this session on a shared store (always True otherwise)."""
    return not shared or store.claim(i, j, annotator)


class _KeptAnswers:
    """The kept must-link / cannot-link answers as a graph, to name the answers a dropped one contradicts."""

    def __init__(self, initial: Constraints):
        self.reset(initial)

    def reset(self, initial: Constraints) -> None:
        self.must: dict[int, list[tuple[int, dict]]] = collections.defaultdict(list)
        self.cannot: list[tuple[int, int, dict]] = []
        for a, b, kind in initial.pairs:
            self.add(a, b, kind == "must", None, None)

    def add(self, a: int, b: int, must: bool, who: str | None, number: int | None) -> None:
        rec = {"number": number, "i": a, "j": b, "answer": "must" if must else "cannot", "annotator": who}
        if must:
            self.must[a].append((b, rec))
            self.must[b].append((a, rec))
        else:
            self.cannot.append((a, b, rec))

    def _path(self, src: int, dst: int) -> list[dict]:
        """The must-link answers on a shortest path from ``src`` to ``dst`` (breadth-first)."""
        if src == dst:
            return []
        prev: dict[int, tuple[int, dict]] = {src: (src, {})}
        queue = collections.deque([src])
        while queue:
            x = queue.popleft()
            for y, rec in self.must[x]:
                if y not in prev:
                    prev[y] = (x, rec)
                    if y == dst:
                        out = []
                        while y != src:
                            y, r = prev[y]
                            out.append(r)
                        return out[::-1]
                    queue.append(y)
        return []

    def explain(self, cons: Constraints, a: int, b: int, answer: str, who: str | None, number: int) -> dict:
        """The conflict of a dropped answer: ``{"answer": its record, "contradicts": [earlier records]}``."""
        because: list[dict] = []
        if answer == "cannot":  # a and b are joined by must-links
            because = self._path(a, b)
        else:  # their groups are cannot-linked
            g = cons.group_of
            for c, d, rec in self.cannot:
                if {int(g[c]), int(g[d])} == {int(g[a]), int(g[b])}:
                    if g[c] != g[a]:
                        c, d = d, c
                    because = [*self._path(a, c), rec, *self._path(d, b)]
                    break
        mine = {"number": number, "i": a, "j": b, "answer": answer, "annotator": who}
        return {"answer": mine, "contradicts": because, "message": describe_conflict(mine, because)}


def _describe_answer(rec: dict) -> str:
    kind = "same cluster" if rec["answer"] == "must" else "different clusters"
    if rec.get("number") is None:
        return f"the initial constraint {rec['i']}-{rec['j']} ({kind})"
    who = rec.get("annotator") or "an unknown annotator"
    return f"answer {rec['number']} ({rec['i']}-{rec['j']}: {kind}, by {who})"


def describe_conflict(answer: dict, contradicts: list[dict]) -> str:
    """One line naming a dropped answer and the earlier answers it contradicts (with who gave them)."""
    earlier = ", ".join(_describe_answer(r) for r in contradicts) or "earlier answers"
    return f"{_describe_answer(answer)} contradicts {earlier}; it is recorded but not used as a constraint"


def _split(key):
    import jax

    key, sub = jax.random.split(key)
    return key, sub
