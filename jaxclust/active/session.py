"""One active-learning session: explicit state and the small steps :class:`~jaxclust.active.ActiveLearner` runs.

* :class:`SessionState` is everything a session knows: the constraints kept, every answer used, the pairs never
  to ask again, the conflicts, the current samples.
* :func:`apply_answer` adds one answer to a state (hard constraint, observation with an error rate, or "don't
  know"); it is the only place answers become constraints.
* :func:`plan_resume` says whether an interrupted session can be continued exactly, from which fit.
* :class:`Session` is the driver: it refits (:meth:`Session.fit`), records rounds, takes in other annotators'
  answers, chooses a round's pairs through the strategy registry (:func:`jaxclust.active.selection.pick`; the
  batch method, which needs the answers between picks, is :meth:`Session.batch_round`) and asks them through one
  ask-or-replay step (:meth:`Session.answer`). The learner's module docstring says what a session promises
  (resuming, several annotators, undo, conflicts).
"""

from __future__ import annotations

import collections
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxclust.active.classes import class_samples
from jaxclust.active.entropy import agreeing_samples, top_entropy_pairs
from jaxclust.active.oracles import SessionStopped, check_reply
from jaxclust.active.selection import Round, pick
from jaxclust.coclustering import least_squares_sample
from jaxclust.constraints import Constraints, shortest_path
from jaxclust.errors import JaxclustWarning
from jaxclust.metrics.partition import (
    adjusted_rand_index,
    homogeneity_completeness_v_measure,
    pairwise_link_accuracy,
    v_beta,
    variation_of_information,
)
from jaxclust.validation import prng_key

__all__ = [
    "SessionState",
    "apply_answer",
    "replay",
    "plan_resume",
    "draw",
    "Session",
    "describe_conflict",
    "score_samples",
]

METRICS = ("v_beta", "v_measure", "homogeneity", "completeness", "vi", "link_accuracy", "ari")


def score_samples(samples, labels) -> dict[str, float]:
    """Partition metrics of each sampled partition against gold ``labels``, averaged over the samples.

    Returns ``v_beta``, ``v_measure``, ``homogeneity``, ``completeness``, ``vi`` (nats), ``link_accuracy``
    (fraction of item pairs whose same/different status matches the gold standard) and ``ari`` (adjusted Rand
    index: 0 for all singletons, where V-beta and link accuracy stay high when the classes are small), plus
    ``n_clusters``.
    """

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
                adjusted_rand_index(labels, z),
                len(np.unique(z)),
            )
        )
    mean = np.mean(np.array(rows, dtype=np.float64), axis=0)
    n = len(METRICS)
    return {**{k: float(m) for k, m in zip(METRICS, mean[:n], strict=True)}, "n_clusters": float(mean[n])}


class Diverged(Exception):  # noqa: N818 - control flow: a replayed answer is not about the pair asked
    pass


@dataclass
class SessionState:
    """What a session knows. ``answers``: every answer used, in order (``i``, ``j``, ``answer``,
    ``annotator``, ``kept``); ``unknown``/``soft``/``taken``: pairs not to ask (answered "don't know",
    answered with an error rate, claimed by another live session); ``dropped``/``conflicts``: hard answers
    dropped as contradictory and why; ``samples`` (S, n) the partitions questions are about, ``components``
    (n,) the model's best sample."""

    initial: Constraints
    constraints: Constraints
    graph: KeptAnswers
    answers: list = field(default_factory=list)
    unknown: set = field(default_factory=set)
    soft: set = field(default_factory=set)
    taken: set = field(default_factory=set)
    dropped: list = field(default_factory=list)
    conflicts: list = field(default_factory=list)
    asked: int = 0
    n_fits: int = 0
    samples: Any = None
    components: Any = None
    stale: bool = False
    round_answers: int = 0

    @classmethod
    def start(cls, initial: Constraints) -> SessionState:
        return cls(
            initial=initial,
            constraints=initial,
            graph=KeptAnswers(initial),
            soft={(min(i, j), max(i, j)) for i, j, _, _ in initial.answers},
        )

    def reset(self) -> None:
        """Back to no answer (the samples are kept, marked stale)."""
        fresh = SessionState.start(self.initial)
        for name in ("constraints", "graph", "answers", "unknown", "soft", "dropped", "conflicts", "asked"):
            setattr(self, name, getattr(fresh, name))
        self.stale = True

    def excluded(self) -> set[tuple[int, int]]:
        return self.unknown | self.taken | self.soft if (self.taken or self.soft) else self.unknown


def apply_answer(state: SessionState, rec: dict, rate: float) -> tuple[bool, bool]:
    """Add the answer ``rec`` (``i``, ``j``, ``answer``, ``annotator``) given with error rate ``rate``.

    Returns ``(kept, changed)``: whether it became a constraint or observation, and whether the constraints
    changed. A hard answer that contradicts the kept ones is dropped and its conflict explained.
    """
    a, b, answer = min(rec["i"], rec["j"]), max(rec["i"], rec["j"]), rec["answer"]
    who = rec.get("annotator")
    kept, changed = True, False
    if answer == "unknown":
        state.unknown.add((a, b))
    elif rate > 0:  # an observation: never dropped, never contradicts
        state.constraints = state.constraints.with_answer(a, b, answer == "must", rate)
        state.soft.add((a, b))
        changed = True
    else:
        new = state.constraints.with_constraint(a, b, answer == "must")
        kept = changed = len(new.dropped) == len(state.constraints.dropped)
        number = len(state.answers) + 1
        if kept:
            state.graph.add(a, b, answer == "must", who, number)
        else:
            state.dropped.append((a, b, answer))
            state.conflicts.append(state.graph.explain(state.constraints, a, b, answer, who, number))
        state.constraints = new
    state.answers.append({"i": a, "j": b, "answer": answer, "annotator": who, "kept": kept})
    state.asked += 1
    return kept, changed


def replay(state: SessionState, records: list[dict], rates: list[float]) -> None:
    """Apply ``records`` (each with its error rate in ``rates``) to a state that holds no answer yet (just
    started or :meth:`~SessionState.reset`): the same state as :func:`apply_answer` on each in turn, but the
    constraints are built once, in time linear in the number of answers instead of quadratic."""
    ini = state.constraints
    if state.answers or ini.dropped:
        for rec, rate in zip(records, rates, strict=True):
            apply_answer(state, rec, rate)
        return
    prefix = [(i, j, kind) for i, j, kind in ini.pairs] + list(ini.answers)
    entries: list[tuple] = []
    for rec, rate in zip(records, rates, strict=True):
        if rec["answer"] != "unknown":
            a, b = min(rec["i"], rec["j"]), max(rec["i"], rec["j"])
            entries.append((a, b, rec["answer"]) if rate <= 0 else (a, b, rec["answer"], rate))
    cons = Constraints.from_answers(ini.n, prefix + entries, on_conflict="drop")
    drops, d, e = list(cons.dropped), 0, 0
    for rec, rate in zip(records, rates, strict=True):
        a, b, answer = min(rec["i"], rec["j"]), max(rec["i"], rec["j"]), rec["answer"]
        who, kept = rec.get("annotator"), True
        if answer == "unknown":
            state.unknown.add((a, b))
        elif rate > 0:
            state.soft.add((a, b))
            e += 1
        else:
            number = len(state.answers) + 1
            if d < len(drops) and drops[d] == ((a, b), answer):
                kept, d = False, d + 1
                state.dropped.append((a, b, answer))
                before = Constraints.from_answers(ini.n, prefix + entries[:e], on_conflict="drop")
                state.conflicts.append(state.graph.explain(before, a, b, answer, who, number))
            else:
                state.graph.add(a, b, answer == "must", who, number)
            e += 1
        state.answers.append({"i": a, "j": b, "answer": answer, "annotator": who, "kept": kept})
        state.asked += 1
    state.constraints = cons


def plan_resume(answers: list[dict], fits: list[dict], settings: str, n: int, batch: bool):
    """The last fit of an interrupted session and its warm-start state (``(record, init_labels or None)``)
    when the session can be continued exactly; else None (every stored answer is applied and the model
    refitted from scratch). ``batch``: the strategy picks between answers (a fit may sit inside a round)."""
    if not fits:
        return None
    last = fits[-1]
    q = last["n_answers"]
    if last["settings"] != settings or q > len(answers):
        return None
    if not batch and last["pos"] != 0:
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


def draw(learner, model, X, constraints: Constraints, seed: int, warm_from=None, n_burnin=None):
    """Fit ``model`` to ``X`` under ``constraints`` (warm from ``warm_from`` when given) and read its samples
    as the learner's propagation says. Returns ``(samples (S, n), components (n,), warm, n_burnin)``: the
    partitions questions are about (classes unless ``propagation="pairs"``), the model's best sample of
    components, and whether / with what burn-in the fit was warm-started."""
    samples, warm, burn = learner._fit(model, X, constraints, seed, warm_from=warm_from, n_burnin=n_burnin)
    best = getattr(model, "labels_", None)
    components = samples[0] if best is None else np.asarray(best)
    if learner.propagation != "pairs":
        samples = class_samples(X, samples, constraints, learner.propagation == "classes")
    return samples, components, warm, burn


class Session:
    """The driver of one session of ``learner`` (see the module docstring); :meth:`run` is the generator
    :meth:`ActiveLearner.iter_questions` returns."""

    def __init__(self, learner, model, X, n_queries: int, labels, initial, store, annotator, settings, seed):
        self.learner, self.model, self.X = learner, model, X
        self.n_queries, self.labels, self.store, self.annotator = n_queries, labels, store, annotator
        self.settings, self.base_seed = settings, seed
        self.shared = store is not None and store.shared
        self.state = SessionState.start(initial)
        self.history: list[dict] = []
        self.pending: collections.deque = collections.deque()
        self.key = prng_key(learner.random_state)
        stop = learner.stop_entropy
        self.stop = None if stop is None else float(stop)

    # --- steps --------------------------------------------------------------------------------------------
    def publish(self) -> None:
        """The learner's attributes follow the session."""
        lrn, st = self.learner, self.state
        lrn.model_, lrn.history_, lrn.answers_, lrn.conflicts_ = (
            self.model,
            self.history,
            st.answers,
            st.conflicts,
        )
        lrn.constraints_ = st.constraints
        if st.samples is not None and len(st.samples):
            lrn.labels_ = np.asarray(st.samples[least_squares_sample(st.samples)])
        elif st.components is not None:
            lrn.labels_ = (
                class_samples(self.X, st.components[None], st.constraints, lrn.propagation == "classes")[0]
                if lrn.propagation != "pairs"
                else st.components
            )
        lrn.dropped_ = list(st.dropped)
        lrn.unknown_ = sorted(st.unknown)

    def apply(self, rec: dict, record: bool, round_: int, log: dict | None) -> bool:
        """:func:`apply_answer`, then store it (``record``) and log it in the round; returns ``changed``."""
        who = rec.get("annotator")
        kept, changed = apply_answer(self.state, rec, self.learner._rate_of(who))
        a, b, answer = min(rec["i"], rec["j"]), max(rec["i"], rec["j"]), rec["answer"]
        if record and self.store is not None:
            self.store.append(a, b, answer, kept=kept, round=round_, annotator=who)
        if log is not None:
            log["queries"].append([a, b, answer])
            if not kept:
                log["dropped"].append([a, b, answer])
        return changed

    def sync(self) -> list[dict]:
        """Shared store: take in the answers the other annotators stored since the last look; an answer one of
        them undid rebuilds the constraints from the answers in effect (and the samples go stale)."""
        if not self.shared:
            return []
        update = self.store.refresh()
        if update.undone:
            self.state.reset()
            for rec in self.store.records:
                self.apply(rec, False, 0, None)
            return []
        for rec in update.answers:
            self.apply(rec, False, 0, None)
        return update.answers

    def fit(self, round_use: int, pos: int, record: bool = True, seed=None, warm_from=None, n_burnin=None):
        """One model fit under the current constraints; recorded in the store (before any question uses it)
        unless ``record`` is False."""
        st, lrn, model = self.state, self.learner, self.model
        if seed is None:
            seed = self.base_seed + 7919 * st.n_fits
            warm_from = getattr(model, "final_labels_", None) if st.samples is not None else None
        samples, st.components, warm, burn = draw(
            lrn, model, self.X, st.constraints, seed, warm_from, n_burnin
        )
        st.samples, st.stale = samples, False
        if record and self.store is not None:
            final = getattr(model, "final_labels_", None)
            self.store.append_fit(
                {
                    "n_fit": st.n_fits,
                    "seed": int(seed),
                    "n_answers": st.asked,
                    "round": int(round_use),
                    "pos": int(pos),
                    "warm": bool(warm),
                    "n_burnin": burn,
                    # a shared session is never resumed from its fits: mark them so none is reused
                    "settings": "shared" if self.shared else self.settings,
                    "final_labels": None
                    if final is None or self.shared
                    else np.asarray(final).astype(int).tolist(),
                }
            )
        if record:
            st.n_fits += 1

    def record_round(self, round_: int, log: dict, n_refits: int, seconds: float) -> None:
        st = self.state
        entry = {
            "round": round_,
            "n_queries": st.asked,
            "n_constraints": len(st.constraints),
            "n_unknown": len(st.unknown),
            "n_dropped": len(st.dropped),
            "queries": log["queries"],
            "dropped": log["dropped"],
            "n_refits": n_refits,
            "seconds": seconds,
        }
        if self.labels is not None:
            entry.update(score_samples(st.samples, self.labels))
        self.history.append(entry)

    def answer(self, i: int, j: int):
        """Generator: the answer about ``(i, j)``, replayed from the store while resuming, else asked
        (claimed first on a shared store). Returns ``(record, replayed)``, or None when another session holds
        the question."""
        if self.pending:
            rec = self.pending[0]
            if (rec["i"], rec["j"]) != (min(i, j), max(i, j)):
                raise Diverged
            return self.pending.popleft(), True
        if self.shared and not self.store.claim(i, j, self.annotator):
            return None
        self.publish()
        reply = yield (i, j)
        return {"i": i, "j": j, "answer": check_reply(reply, i, j), "annotator": self.annotator}, False

    def agreement(self, rec: dict) -> np.ndarray:
        """Importance weight of each sample given an answer: 1 where it agrees, 0 (hard answer) or
        eps / (1 - eps) (an answer wrong with probability eps) where it does not."""
        agree = np.asarray(agreeing_samples(self.state.samples, rec["i"], rec["j"], rec["answer"] == "must"))
        eps = self.learner._rate_of(rec.get("annotator"))
        return np.where(agree, 1.0, eps / (1.0 - eps)).astype(np.float32)

    # --- rounds -------------------------------------------------------------------------------------------
    def batch_round(self, round_: int, budget: int, pos: int, log: dict):
        """Generator: the batch method's round (each pick from the samples that agree with the round's answers;
        new samples when fewer than ``min_samples`` agree). Returns ``(n_refits, confident)``."""
        st, lrn, stop = self.state, self.learner, self.stop
        n_refits = 0
        weights = np.ones(st.samples.shape[0], np.float32)
        fresh, changed = True, False  # samples just fitted / answers changed them since
        b = pos
        while b < budget:
            for rec in self.sync():  # other annotators' answers filter the samples as ours do
                if rec["answer"] != "unknown":
                    weights = weights * self.agreement(rec)
                fresh, changed = False, True
            if self.shared and st.asked >= self.n_queries:
                break
            if st.stale or (not fresh and weights.sum() < lrn.min_samples):
                self.fit(round_, b)  # too few samples agree (or they are stale): draw new ones
                n_refits += 1
                weights = np.ones(st.samples.shape[0], np.float32)
                fresh, changed = True, False
            best = top_entropy_pairs(st.samples, 1, st.constraints, weights, st.excluded(), lrn.block_size)
            if stop is not None and best and best[0][2] < stop and not self.pending:
                if changed:  # judge confidence on samples that saw every answer
                    self.fit(round_, b)
                    n_refits += 1
                    weights = np.ones(st.samples.shape[0], np.float32)
                    fresh, changed = True, False
                    best = top_entropy_pairs(
                        st.samples, 1, st.constraints, None, st.excluded(), lrn.block_size
                    )
                if best and best[0][2] < stop:
                    lrn.max_entropy_ = best[0][2]
                    return n_refits, True
            if not best:
                break
            i, j, _ = best[0]
            got = yield from self.answer(i, j)
            if got is None:
                st.taken.add((min(i, j), max(i, j)))
                continue
            rec, replayed = got
            changed = self.apply(rec, not replayed, round_, log) or changed
            st.round_answers += 1
            fresh = False
            if rec["answer"] != "unknown":
                weights = weights * self.agreement(rec)
            b += 1
        return n_refits, False

    def pick_round(self, round_: int, budget: int, log: dict):
        """Generator: a round whose pairs a strategy of the registry chooses in one pass (pairs made known by
        an earlier answer of the round are skipped; on a shared store, pairs another session holds are set
        aside and the strategy picks again). Returns ``(0, confident)``."""
        st, lrn, stop = self.state, self.learner, self.stop
        done, first = 0, True
        while done < budget:
            sub = None
            if lrn.strategy == "random":
                self.key, sub = _split(self.key)
            view = Round(
                st.samples,
                st.constraints,
                st.excluded(),
                key=sub,
                X=self.X,
                components=st.components,
                block=lrn.block_size,
                need_entropy=first and stop is not None and not self.pending,
                split=lrn.propagation == "classes",
            )
            pairs, h_max = pick(lrn.strategy, view, budget - done)
            if first and stop is not None and not self.pending and h_max is not None and h_max < stop:
                lrn.max_entropy_ = h_max
                return 0, True
            first, held = False, False
            for i, j in pairs:
                self.sync()
                if st.constraints.status(i, j) is not None or (min(i, j), max(i, j)) in st.excluded():
                    continue
                if self.shared and st.asked >= self.n_queries:
                    return 0, False
                got = yield from self.answer(i, j)
                if got is None:
                    st.taken.add((min(i, j), max(i, j)))
                    held = True
                    continue
                rec, replayed = got
                self.apply(rec, not replayed, round_, log)
                st.round_answers += 1
                done += 1
            if not held or not pairs:
                break
        return 0, False

    # --- the session --------------------------------------------------------------------------------------
    def start(self) -> tuple[int, int]:
        """Apply the stored answers and make the first fit (exactly the interrupted session's last fit when
        it can be continued). Returns the round and the position in it to continue from."""
        st, store, lrn = self.state, self.store, self.learner
        if store is not None and self.shared:
            store.refresh()  # from here on, refresh() reports only what the others add
        stored = store.records if store is not None else []
        # several annotators: no single session to reproduce; every stored answer is applied and refitted
        plan = (
            None
            if store is None or self.shared
            else plan_resume(stored, store.fits, self.settings, self.X.shape[0], lrn.strategy == "batch")
        )
        t0 = time.perf_counter()
        if lrn.status is not None:
            lrn.status(
                f"Fitting the model to {self.X.shape[0]} items"
                + (f" ({len(stored)} stored answers)" if stored else "")
                + " - the first fit also compiles, this can take a while..."
            )
        replay_log: dict = {"queries": [], "dropped": []}
        if plan is None:
            for rec in stored:
                self.apply(rec, False, rec["round"], replay_log)
            round_, pos = max((r["round"] for r in stored), default=0) + 1, 0
            self.fit(round_, 0)
        else:
            last, init = plan
            q = last["n_answers"]
            for rec in stored[:q]:
                self.apply(rec, False, rec["round"], replay_log)
            self.pending.extend(stored[q:])
            st.n_fits = last["n_fit"]
            self.fit(
                last["round"],
                last["pos"],
                record=False,
                seed=last["seed"],
                warm_from=init,
                n_burnin=last["n_burnin"],
            )
            st.n_fits = last["n_fit"] + 1
            final = getattr(self.model, "final_labels_", None)
            if last["final_labels"] is not None and (
                final is None or not np.array_equal(np.asarray(final), np.asarray(last["final_labels"]))
            ):
                warnings.warn(
                    f"resuming {store.path}: the refit of the last model did not reproduce the stored chain states "
                    "(another JAX version or machine?); no answer is lost, but the next questions may differ "
                    "from those of an uninterrupted session",
                    JaxclustWarning,
                    stacklevel=5,
                )
            round_, pos = last["round"], last["pos"]
        if lrn.strategy == "random":  # the key of round r is the r-th split, however the session was resumed
            for _ in range(round_ - 1):
                self.key, _sub = _split(self.key)
        if lrn.status is not None:
            lrn.status(f"Model ready ({time.perf_counter() - t0:.1f} s).")
        self.record_round(0, replay_log, 1, time.perf_counter() - t0)
        return round_, pos

    def run(self):
        """Generator: the whole session (see :meth:`ActiveLearner.iter_questions`); returns the history."""
        lrn, st = self.learner, self.state
        self.publish()
        lrn.stopped_ = False
        lrn.stop_detail_ = None
        lrn.max_entropy_ = None
        round_, pos = self.start()
        pbar = None
        if lrn.progress:
            from tqdm.auto import tqdm

            pbar = tqdm(
                total=self.n_queries,
                initial=min(st.asked, self.n_queries),
                desc=f"queries ({lrn.strategy}, seed {self.base_seed})",
                unit="q",
                leave=False,
            )
        reason = "done"
        log: dict = {"queries": [], "dropped": []}
        t0 = time.perf_counter()
        try:
            while st.asked - pos < self.n_queries:  # answers before this round (pos > 0 only when resuming)
                t0 = time.perf_counter()
                log = {"queries": [], "dropped": []}
                budget = min(int(lrn.batch_size), self.n_queries - (st.asked - pos))
                shown = st.asked
                st.round_answers = pos  # this session's answers in the round (others' are not counted)
                st.taken.clear()
                n_refits, confident = 0, False
                try:
                    if lrn.strategy == "batch":
                        n_refits, confident = yield from self.batch_round(round_, budget, pos, log)
                    else:
                        n_refits, confident = yield from self.pick_round(round_, budget, log)
                except Diverged:
                    warnings.warn(
                        f"resuming {self.store.path}: a stored answer is not about the pair this session would "
                        "ask now; every stored answer is kept and the model is refitted with all of them",
                        JaxclustWarning,
                        stacklevel=3,
                    )
                while self.pending:  # answers of the interrupted round not reached again: keep every one
                    self.apply(self.pending.popleft(), False, round_, log)
                    st.round_answers += 1
                if pbar is not None:
                    pbar.update(st.asked - shown)
                pos = 0
                if confident or st.round_answers == 0:  # nothing asked: confident, or nothing left
                    if log["queries"] or n_refits:
                        self.record_round(round_, log, n_refits, time.perf_counter() - t0)
                    reason = "confident" if confident else "exhausted"
                    break
                self.fit(round_ + 1, 0)
                self.record_round(round_, log, n_refits + 1, time.perf_counter() - t0)
                round_ += 1
        except GeneratorExit:  # closed by the caller (e.g. to undo an answer): nothing more to do
            reason = "closed"
            raise
        except SessionStopped as exc:
            lrn.stopped_ = True
            lrn.stop_detail_ = str(exc) or None
            reason = "stopped"
            # answers of the unfinished round are stored; refit so that the history reflects them (this fit is
            # not recorded: a resumed session continues from the last recorded one, as an uninterrupted would)
            if log["queries"]:
                self.fit(round_, 0, record=False)
                self.record_round(round_, log, 1, time.perf_counter() - t0)
        finally:
            if pbar is not None:
                pbar.close()
            self.publish()
            lrn.stop_reason_ = reason
        return self.history


class KeptAnswers:
    """The kept must-link / cannot-link answers as a graph, to name the answers a dropped one contradicts."""

    def __init__(self, initial: Constraints):
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
        """The must-link answers on a shortest path from ``src`` to ``dst``."""
        return [rec for _, _, rec in shortest_path(self.must, src, dst)]

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
