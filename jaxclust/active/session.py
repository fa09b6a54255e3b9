"""One annotator's session, in rounds: the driver of :class:`~jaxclust.active.core.SessionCore` that
:meth:`ActiveLearner.run <jaxclust.active.ActiveLearner.run>` and ``iter_questions`` run (and through them the
terminal and the notebook).

* :class:`Session` refits (:meth:`Session.fit`), records rounds, takes in other annotators' answers, chooses a
  round's pairs (:meth:`SessionCore.rank <jaxclust.active.core.SessionCore.rank>`; the batch method, which needs
  the answers between picks, is :meth:`Session.batch_round`) and asks them through one ask-or-replay step
  (:meth:`Session.answer`). After every change it hands an :class:`Outcome` to its ``publish`` callback (the
  learner copies it into its attributes); it never reads or writes the learner.
* :func:`plan_resume` says whether an interrupted session can be continued exactly, from which fit.

The learner's module docstring says what a session promises (resuming, several annotators, undo, conflicts).
"""

from __future__ import annotations

import collections
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from jaxclust.active.core import SessionCore, SessionSettings
from jaxclust.active.entropy import top_entropy_pairs
from jaxclust.active.oracles import SessionStopped, check_reply
from jaxclust.answers import Answer
from jaxclust.constraints import Constraints
from jaxclust.errors import JaxclustWarning
from jaxclust.metrics.partition import (
    adjusted_rand_index,
    homogeneity_completeness_v_measure,
    pairwise_link_accuracy,
    v_beta,
    variation_of_information,
)
from jaxclust.validation import prng_key

__all__ = ["Session", "Outcome", "plan_resume", "score_samples"]

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


def plan_resume(answers: list[dict], fits: list[dict], settings: str, n: int, batch: bool):
    """The last fit of an interrupted session and its warm-start state (``(record, init_labels or None,
    init_components or None, chains or None, log_weights or None)``: the previous fit's chains, carried over and
    weighted as the record says) when the session can be continued exactly; else None (every stored answer is
    applied and the model refitted from scratch). ``batch``: the strategy picks between answers (a fit may sit
    inside a round)."""
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
    init = components = chains = log_weights = None
    if last["warm"]:
        prev = fits[-2] if len(fits) >= 2 else {"final_labels": None}
        rows = prev["final_labels"]
        if rows is None or len(rows) == 0 or any(len(row) != n for row in rows):
            return None
        init = np.asarray(rows, dtype=np.int64)
        comps = prev.get("final_components")
        if comps is not None:
            if len(comps) != len(rows) or any(len(row) != n for row in comps):
                return None
            components = np.asarray(comps, dtype=np.int64)
        chains = last.get("warm_chains")  # the fit started from these of the previous fit's chains
        if chains is not None:
            if len(chains) != len(init) or not all(0 <= c < len(init) for c in chains):
                return None
            init = init[chains]
            components = None if components is None else components[chains]
        log_weights = last.get("log_weights")
        if log_weights is not None:
            log_weights = np.asarray(log_weights, dtype=np.float64)
            if log_weights.shape != (len(init),) or not np.all(np.isfinite(log_weights)):
                return None
    return last, init, components, chains, log_weights


class Outcome(NamedTuple):
    """What a session has to show (the learner copies it into its attributes of the same names plus ``_``):
    ``labels`` None before the first fit; ``stop_reason`` None while the session runs."""

    model: Any
    history: list
    answers: list
    conflicts: list
    constraints: Constraints
    labels: np.ndarray | None
    dropped: list
    unknown: list
    stopped: bool
    stop_detail: str | None
    stop_reason: str | None
    max_entropy: float | None
    samples: np.ndarray | None = None


class Session:
    """One annotator's session (see the module docstring); :meth:`run` is the generator
    :meth:`ActiveLearner.iter_questions` returns.

    ``publish(outcome)`` is called with an :class:`Outcome` before every question and when the session ends."""

    def __init__(
        self,
        settings: SessionSettings,
        model,
        X,
        n_queries: int,
        labels,
        initial: Constraints | None,
        store,
        annotator: str,
        base_seed: int,
        publish: Callable[[Outcome], Any] | None = None,
    ):
        self.settings, self.X, self.n_queries, self.labels = settings, X, n_queries, labels
        self.store, self.annotator, self.base_seed, self.on_change = store, annotator, base_seed, publish
        self.core = SessionCore(settings, model, X, initial, base_seed)
        self.digest = settings.digest(model, base_seed)
        self.shared = store is not None and store.shared
        self.history: list[dict] = []
        self.pending: collections.deque = collections.deque()
        self.key = prng_key(settings.random_state)
        self.stop = None if settings.stop_entropy is None else float(settings.stop_entropy)
        self.stopped, self.stop_detail = False, None
        self.stop_reason: str | None = None
        self.max_entropy: float | None = None

    @property
    def state(self):
        return self.core.state

    # --- steps --------------------------------------------------------------------------------------------
    def outcome(self) -> Outcome:
        st = self.state
        return Outcome(
            self.core.model,
            self.history,
            st.answers,
            st.conflicts,
            st.constraints,
            self.core.labels,
            list(st.dropped),
            sorted(st.unknown),
            self.stopped,
            self.stop_detail,
            self.stop_reason,
            self.max_entropy,
            st.samples,
        )

    def publish(self) -> None:
        if self.on_change is not None:
            self.on_change(self.outcome())

    def apply(self, rec: dict, record: bool, round_: int, log: dict | None) -> bool:
        """The core's answer transition, then store it (``record``) and log it in the round; returns ``changed``."""
        kept, changed = self.core.answer(rec)
        a, b, answer = min(rec["i"], rec["j"]), max(rec["i"], rec["j"]), rec["answer"]
        if record and self.store is not None:
            self.store.append(a, b, answer, kept=kept, round=round_, annotator=rec.get("annotator"))
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
            self.core.rebuild(self.store.records)
            return []
        for rec in update.answers:
            self.apply(rec, False, 0, None)
        return update.answers

    def fit(self, round_use: int, pos: int, record: bool = True, seed=None, warm_from=None, **warm):
        """One model fit under the current constraints; recorded in the store (before any question uses it)
        unless ``record`` is False. ``seed``, ``warm_from`` and ``warm`` (``n_burnin``, ``warm_components``):
        as :meth:`SessionCore.draw` takes them."""
        st = self.state
        self.core.rerate()
        fit = self.core.draw(seed=seed, warm_from=warm_from, **warm)
        self.core.install(fit, count=False)
        if record and self.store is not None:
            self.store.append_fit(
                {
                    "n_fit": st.n_fits,
                    "seed": fit.seed,
                    "n_answers": st.asked,
                    "round": int(round_use),
                    "pos": int(pos),
                    "warm": fit.warm,
                    "n_burnin": fit.n_burnin,
                    # a shared session is never resumed from its fits: mark them so none is reused
                    "settings": "shared" if self.shared else self.digest,
                    "final_labels": None
                    if fit.final is None or self.shared
                    else fit.final.astype(int).tolist(),
                }
                | (
                    {}
                    if fit.final_components is None or self.shared
                    else {"final_components": fit.final_components.astype(int).tolist()}
                )
                | ({} if fit.chains is None else {"warm_chains": fit.chains.astype(int).tolist()})
                | ({} if fit.log_weights is None else {"log_weights": fit.log_weights.tolist()})
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
        who = reply.annotator if isinstance(reply, Answer) and reply.annotator else self.annotator
        return {"i": i, "j": j, "answer": check_reply(reply, i, j), "annotator": who}, False

    # --- rounds -------------------------------------------------------------------------------------------
    def batch_round(self, round_: int, budget: int, pos: int, log: dict):
        """Generator: the batch method's round (each pick from the samples that agree with the round's answers;
        new samples when fewer than ``min_samples`` agree). Returns ``(n_refits, confident)``."""
        st, s, stop = self.state, self.settings, self.stop
        n_refits = 0
        weights = np.ones(st.samples.shape[0], np.float32)
        fresh, changed = True, False  # samples just fitted / answers changed them since
        b = pos
        while b < budget:
            for rec in self.sync():  # other annotators' answers filter the samples as ours do
                if rec["answer"] != "unknown":
                    weights = weights * self.core.agreement(rec)
                fresh, changed = False, True
            if self.shared and st.asked >= self.n_queries:
                break
            if st.stale or (not fresh and weights.sum() < s.min_samples):
                self.fit(round_, b)  # too few samples agree (or they are stale): draw new ones
                n_refits += 1
                weights = np.ones(st.samples.shape[0], np.float32)
                fresh, changed = True, False
            best = top_entropy_pairs(st.samples, 1, st.constraints, weights, st.excluded(), s.block_size)
            if stop is not None and best and best[0][2] < stop and not self.pending:
                if changed:  # judge confidence on samples that saw every answer
                    self.fit(round_, b)
                    n_refits += 1
                    weights = np.ones(st.samples.shape[0], np.float32)
                    fresh, changed = True, False
                    best = top_entropy_pairs(st.samples, 1, st.constraints, None, st.excluded(), s.block_size)
                if best and best[0][2] < stop:
                    self.max_entropy = best[0][2]
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
                weights = weights * self.core.agreement(rec)
            b += 1
        return n_refits, False

    def pick_round(self, round_: int, budget: int, log: dict):
        """Generator: a round whose pairs a strategy of the registry chooses in one pass (pairs made known by
        an earlier answer of the round are skipped; on a shared store, pairs another session holds are set
        aside and the strategy picks again). Returns ``(0, confident)``."""
        st, s, stop = self.state, self.settings, self.stop
        done, first = 0, True
        while done < budget:
            sub = None
            if s.strategy == "random":
                self.key, sub = _split(self.key)
            need = first and stop is not None and not self.pending
            pairs, h_max = self.core.rank(budget - done, st.excluded(), key=sub, need_entropy=need)
            if need and h_max is not None and h_max < stop:
                self.max_entropy = h_max
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
        st, store, s = self.state, self.store, self.settings
        if store is not None and self.shared:
            store.refresh()  # from here on, refresh() reports only what the others add
        stored = store.records if store is not None else []
        # several annotators: no single session to reproduce; every stored answer is applied and refitted
        plan = (
            None
            if store is None or self.shared
            else plan_resume(stored, store.fits, self.digest, self.X.shape[0], s.strategy == "batch")
        )
        t0 = time.perf_counter()
        if s.status is not None:
            s.status(
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
            last, init, components, chains, log_weights = plan
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
                warm_components=components,
                chains=chains,
                log_weights=log_weights,
            )
            st.n_fits = last["n_fit"] + 1
            final = self.core.fit.final
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
        if s.strategy == "random":  # the key of round r is the r-th split, however the session was resumed
            for _ in range(round_ - 1):
                self.key, _sub = _split(self.key)
        if s.status is not None:
            s.status(f"Model ready ({time.perf_counter() - t0:.1f} s).")
        self.record_round(0, replay_log, 1, time.perf_counter() - t0)
        return round_, pos

    def run(self):
        """Generator: the whole session (see :meth:`ActiveLearner.iter_questions`); returns the history."""
        s, st = self.settings, self.state
        self.publish()
        round_, pos = self.start()
        pbar = None
        if s.progress:
            from tqdm.auto import tqdm

            pbar = tqdm(
                total=self.n_queries,
                initial=min(st.asked, self.n_queries),
                desc=f"queries ({s.strategy}, seed {self.base_seed})",
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
                budget = min(int(s.batch_size), self.n_queries - (st.asked - pos))
                shown = st.asked
                st.round_answers = pos  # this session's answers in the round (others' are not counted)
                st.taken.clear()
                n_refits, confident = 0, False
                try:
                    if s.strategy == "batch":
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
            self.stopped = True
            self.stop_detail = str(exc) or None
            reason = "stopped"
            # answers of the unfinished round are stored; refit so that the history reflects them (this fit is
            # not recorded: a resumed session continues from the last recorded one, as an uninterrupted would)
            if log["queries"]:
                self.fit(round_, 0, record=False)
                self.record_round(round_, log, 1, time.perf_counter() - t0)
        finally:
            if pbar is not None:
                pbar.close()
            self.stop_reason = reason
            self.publish()
        return self.history


def _split(key):
    import jax

    key, sub = jax.random.split(key)
    return key, sub
