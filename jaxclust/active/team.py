"""A session answered by a team at once: questions handed out from a pool, the model refitted in the background.

:class:`TeamSession` is the session logic of ``jaxclust serve``. It is made of the pieces every session uses
(the answer store and the session core, :class:`~jaxclust.active.core.SessionCore`: its answer, rebuild, refit
and ranking transitions) and differs from one annotator's session only in how it drives them: answers come
from several people at once, in any order, and nobody waits for the model.

* **Questions from a pool.** After each fit the learner's strategy ranks ``pool_size`` pairs, best first; an
  annotator who asks gets the best one nobody else holds and nobody answered since. Asking again before
  answering gives the same pair (a page reloaded), unless the others' answers settled it meanwhile. Until the
  first fit is done the pool holds random pairs (seeded), so a team can start at once.
* **Refits in the background.** A thread refits the model whenever answers came in since its last fit (warm
  from the last chains) and then replaces the pool; :meth:`TeamSession.answer` never waits for a fit.
* **Second opinions.** A share ``double`` of the pairs (a seeded hash of the pair: a restarted session owes the
  same ones) goes to a second annotator, before any new pair, once someone answered it "same" or "different".
* **Disagreements are soft.** Where two annotators answered a pair both ways, each of their answers counts as an
  observation wrong with that annotator's error rate, measured from how often they agree with the others
  (:func:`~jaxclust.active.agreement.error_rates`); every other answer is used as the learner's ``error_rate``
  says (a hard constraint by default, dropped and explained if it contradicts the kept ones).
* **Undo** appends an undo record (nothing is deleted), rebuilds the constraints from the answers in effect
  and hands the undone pair back to whoever undid it.
* **Durable.** An answer is in the store (on disk) before :meth:`TeamSession.answer` returns; a restarted
  session rebuilds everything from it; answers that other processes add to a shared store come in at every fit.
* **A machine that answers first** (``machine``): a thread has a chat model answer pairs of the pool as one more
  annotator, and hand people the pairs it is unsure of (:mod:`jaxclust.active.team_machine`); a person can
  review its answers in order of doubt (:meth:`TeamSession.review`).
* **One claim protocol.** On a shared store every new pair handed out is claimed in the store
  (:meth:`~jaxclust.active.store.AnswerStore.claim`), as ``annotate --shared`` sessions claim theirs: two team
  servers, or a server and terminal sessions, never hand out the same pair at once.

Every method may be called from any thread: one lock guards the state and the store.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxclust.active.agreement import UNNAMED, error_rates
from jaxclust.active.core import SessionCore
from jaxclust.active.oracles import SessionStopped
from jaxclust.active.replies import ANSWERS
from jaxclust.active.rules import SESSION_RULES
from jaxclust.active.selection import random_pairs
from jaxclust.active.state import SessionState
from jaxclust.active.store import AnswerStore, check_annotator, data_fingerprint
from jaxclust.active.team_machine import TeamMachine
from jaxclust.errors import InvalidInputError, QuestionError
from jaxclust.metrics.partition import v_beta
from jaxclust.validation import check_array, check_float, check_index, check_rule

__all__ = ["TeamSession", "Question", "ANSWERS", "HOLD_SECONDS"]


#: How long a question handed to an annotator is theirs alone (seconds); after that it may go to another.
HOLD_SECONDS = 300.0


@dataclass(frozen=True)
class Question:
    """A pair handed to an annotator: ``i < j``; ``kind`` ``"new"``, ``"second"`` (a second opinion) or
    ``"review"`` (a machine's answer, for :meth:`TeamSession.review`);
    ``reason`` why it is asked, in words; ``p_same`` the share of the model's samples that put the two items
    in one cluster (None before the first fit)."""

    i: int
    j: int
    kind: str
    reason: str
    p_same: float | None


class TeamSession:
    """Several annotators answering one model's questions at once (see the module docstring).

    Parameters
    ----------
    learner : ActiveLearner
        Its model (cloned), ``strategy``, ``error_rate``, ``propagation``, ``stop_entropy`` and ``block_size``
        are used; its oracle, store and annotator are not.
    X : array-like, shape (n, d)
        The items' features.
    store : AnswerStore
        Open; a store that holds answers about other data is refused (``StoreMismatchError``). The session
        never closes it.
    n_queries : int or None
        Stop handing out new pairs once this many answers are in effect (second opinions still go out);
        None: no limit.
    double : float
        Share of the pairs that get a second opinion, in [0, 1].
    pool_size : int
        Pairs ranked after each fit.
    random_state : int
        Seeds the fits (as the learner's model would be), the random pairs before the first fit and the choice
        of doubly answered pairs.
    labels : array of int, optional
        Gold labels: :meth:`status` then reports the model's V-beta against them (never used to choose).
    machine : TeamMachine, optional
        A chat model that answers first (its answers count towards ``n_queries``).

    Attributes
    ----------
    labels_ : ndarray (n,) or None
        The current clustering (the retained sample closest to the others, as ``ActiveLearner.labels_``), None
        before the first fit.
    n_fits : int
        Fits done.
    fit_error : str or None
        Why the last fit failed (the session goes on with the previous samples, or random pairs).
    """

    def __init__(
        self,
        learner,
        X,
        store: AnswerStore,
        *,
        n_queries: int | None = None,
        double: float = 0.1,
        pool_size: int = 32,
        random_state: int = 0,
        labels=None,
        hold_seconds: float = HOLD_SECONDS,
        machine: TeamMachine | None = None,
    ):
        settings = learner.session_settings()
        if n_queries is not None:
            check_rule(SESSION_RULES["n_queries"], n_queries, "n_queries")
        check_float(hold_seconds, "hold_seconds", minimum=0.0, strict=True)
        double = check_rule(SESSION_RULES["double"], double, "double")
        pool_size = check_rule(SESSION_RULES["pool_size"], pool_size, "pool_size")
        if not isinstance(store, AnswerStore):
            raise InvalidInputError(f"store: expected an open AnswerStore, got {type(store).__name__}")
        if machine is not None and not isinstance(machine, TeamMachine):
            raise InvalidInputError(f"machine: expected a TeamMachine or None, got {type(machine).__name__}")
        self.machine = machine
        self.X = check_array(X, name="X", min_rows=2)
        self.n = self.X.shape[0]
        store.check_meta({"n": self.n, "fingerprint": data_fingerprint(self.X)})  # the same data as before
        self.settings, self.store, self.seed = settings, store, int(random_state)
        self.n_queries, self.double, self.pool_size = n_queries, float(double), int(pool_size)
        self.core = SessionCore(settings, copy.deepcopy(learner.model), self.X, None, self.seed)
        self.gold = None if labels is None else np.asarray(labels)
        self.lock = threading.RLock()
        self.fit_error: str | None = None
        self.fit_seconds: float | None = None
        self.max_entropy: float | None = None
        self.answered_at_fit = -1  # answers in effect the samples saw (-1: no fit yet)
        self.hold_seconds = float(hold_seconds)
        self._held: dict[str, Question] = {}  # annotator -> the question they hold
        self._held_at: dict[str, float] = {}  # annotator -> when they got it (time.monotonic)
        self._holder: dict[tuple[int, int], str] = {}
        self._by_pair: dict[tuple[int, int], dict[str, str]] = {}  # pair -> {annotator: must/cannot}
        self._second: dict[tuple[int, int], None] = {}  # pairs owed a second opinion, oldest first
        self._given_back: dict[str, tuple[int, int]] = {}  # annotator -> the pair they undid
        self._last: dict[str, tuple[int, int]] = {}  # annotator -> the pair they answered last
        self._double_memo: dict[tuple[int, int], bool] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._machine_wake = threading.Event()
        with self.lock:
            self._rebuild()
            self._pool, _ = self._rank(None, self.state.constraints, self._excluded())

    @property
    def state(self) -> SessionState:
        """The answers in effect and what they imply (the core's state)."""
        return self.core.state

    @property
    def n_fits(self) -> int:
        return self.core.state.n_fits

    @property
    def labels_(self) -> np.ndarray | None:
        return self.core.labels

    # --- the answers in effect ----------------------------------------------------------------------------------
    def _rate(self, rec: dict, rates: dict[str, float] | None) -> float:
        who, answers = rec.get("annotator"), self._by_pair.get((rec["i"], rec["j"]), {})
        if self.machine is not None and who in self.machine.names and rec["answer"] != "unknown":
            return self.machine.error_rate(rec["answer"], who)
        if rates is not None and len(set(answers.values())) > 1:  # answered both ways: soft, by agreement
            return rates.get(who or UNNAMED, rates.get(UNNAMED, 0.05))
        return self.settings.rate_of(who, rec["answer"])

    def _rebuild(self) -> None:
        """The state from the store's answers in effect (start, undo, a disagreement, others' answers)."""
        records = self.store.records
        self._by_pair = {}
        for rec in records:
            if rec["answer"] != "unknown":
                self._by_pair.setdefault((rec["i"], rec["j"]), {})[rec.get("annotator") or UNNAMED] = rec[
                    "answer"
                ]
        if self.machine is not None:
            self.machine.calibrate(self._by_pair)
        disputed = any(len(set(a.values())) > 1 for a in self._by_pair.values())
        rates = error_rates(records) if disputed else None
        self.core.rebuild(records, [self._rate(r, rates) for r in records])
        self._second = {p: None for p, a in self._by_pair.items() if len(a) == 1 and self._owed(p, a)}
        self._wake.set()

    def _owed(self, p: tuple[int, int], answers: dict[str, str]) -> bool:
        """Whether the pair, answered once as ``answers`` says, is owed a second opinion (a person's check of
        the machine's answers, else the ``double`` share)."""
        mine = None if self.machine is None else self.machine.said(answers)
        if mine is not None:
            return self.machine.checked(*p, mine[1], mine[0])
        return self._doubled(*p)

    def _doubled(self, i: int, j: int) -> bool:
        """Whether the pair is one of the ``double`` share asked twice (a seeded hash: the same after a restart)."""
        got = self._double_memo.get((i, j))
        if got is None:
            got = self.double > 0 and np.random.default_rng([self.seed, 7, i, j]).random() < self.double
            self._double_memo[(i, j)] = got
        return got

    # --- handing out questions -------------------------------------------------------------------------------
    def _free(self, p: tuple[int, int]) -> bool:
        """Nobody holds the pair, or its holder has had it longer than ``hold_seconds`` (it may go to another
        annotator; the holder can still answer it until then)."""
        who = self._holder.get(p)
        return who is None or time.monotonic() - self._held_at.get(who, 0.0) > self.hold_seconds

    def _open(self, p: tuple[int, int]) -> bool:
        """The pair is free, nobody answered it, and the answers do not imply it."""
        st = self.state
        return (
            self._free(p)
            and p not in self._by_pair
            and p not in st.unknown
            and st.constraints.status(*p) is None
        )

    def _describe(self, p: tuple[int, int], kind: str) -> Question:
        samples = self.state.samples
        p_same = None if samples is None else float(np.mean(samples[:, p[0]] == samples[:, p[1]]))
        if kind in ("second", "review"):
            first = ", ".join(f"{w}: {a}" for w, a in sorted(self._by_pair[p].items()))
            machine = self.machine is not None and self.machine.said(self._by_pair[p]) is not None
            why = "a check of the chat model's answers" if machine else "the share of pairs asked twice"
            reason = f"a second opinion ({why} measures agreement; {first})"
        elif p_same is None:
            reason = "the model is still starting: a random pair"
        elif p_same in (0.0, 1.0):
            side = "in one cluster" if p_same == 1.0 else "apart"
            reason = f"no answer has tested the model's belief that these belong {side}"
        else:
            reason = "the model is unsure about this pair"
        return Question(int(p[0]), int(p[1]), kind, reason, p_same)

    def question(self, annotator: str) -> Question | None:
        """The question for ``annotator``: the one they hold, else a second opinion they have not given, else
        a pair the machine handed to people, else the best open pair of the pool. None when nothing is left to
        ask (see :meth:`status`)."""
        who = self._person(annotator)
        with self.lock:
            held = self._held.get(who)
            if held is not None:
                if held.kind != "new" or self.state.constraints.status(held.i, held.j) is None:
                    return held
                self._release(who)  # others' answers settled it meanwhile
            back = self._given_back.pop(who, None)
            if back is not None and self._open(back):
                q = self._claim(who, back, "new", "you undid your answer to this pair")
                if q is not None:
                    return q
            for p in self._second:
                if self._free(p) and who not in self._by_pair[p]:
                    return self._hold(who, p, "second")
            if self.done:
                return None
            for p, reason in list(self.machine.for_people.items() if self.machine is not None else ()):
                if not self._open(p):
                    if self._free(p):  # answered or implied since
                        self.machine.for_people.pop(p)
                    continue
                q = self._claim(who, p, "new", reason)
                if q is not None:
                    return q
            return self._from_pool(who)

    def _from_pool(self, who: str) -> Question | None:
        """The best open pair of the pool held for ``who`` (the pool ranked again once when it runs out)."""
        for attempt in range(2):
            while self._pool:
                p = self._pool.pop(0)
                if self._open(p):
                    q = self._claim(who, p, "new")
                    if q is not None:
                        return q
            if attempt == 0:
                self._pool, _ = self._rank(self.core.fit, self.state.constraints, self._excluded())
        return None

    def _person(self, annotator: str) -> str:
        who = check_annotator(annotator)
        if self.machine is not None and who in self.machine.names:
            raise InvalidInputError(f"annotator: {who!r} is the chat model's name here; choose another")
        return who

    def review(self, annotator: str) -> Question | None:
        """A machine's answer for ``annotator`` to review (:meth:`TeamMachine.to_review`: the most doubted one
        nobody else answered or holds), answered with :meth:`answer`; None without a machine or when none is
        left. A different answer overrules the machine's (both stay, each soft with its error rate)."""
        who = self._person(annotator)
        with self.lock:
            held = self._held.get(who)
            if held is not None and held.kind == "review":
                return held
            if self.machine is None:
                return None
            found = self.machine.to_review(self._by_pair, self.state.samples, self._free)
            if found is None:
                return None
            if held is not None:
                self._release(who)
            return self._hold(who, found[0], "review", found[1])

    def _claim(self, who: str, p: tuple[int, int], kind: str, reason: str | None = None) -> Question | None:
        """Hold ``p`` for ``who`` if no other session on the store holds it (the store's claim, the protocol of
        every session on a shared store; a second opinion, about a pair already answered, is not claimed)."""
        if not self.store.claim(p[0], p[1], who):
            return None
        return self._hold(who, p, kind, reason)

    def _hold(self, who: str, p: tuple[int, int], kind: str, reason: str | None = None) -> Question:
        q = self._describe(p, kind)
        if reason is not None:
            q = Question(q.i, q.j, q.kind, reason, q.p_same)
        before = self._holder.get(p)
        if before is not None and before != who:  # a hold that expired: its holder no longer has the pair
            self._release(before)
        self._held[who], self._holder[p] = q, who
        self._held_at[who] = time.monotonic()
        return q

    @property
    def done(self) -> bool:
        """No new pair is handed out: ``n_queries`` answers are in effect, or the model is confident (its
        highest link entropy, fitted to every answer, below the learner's ``stop_entropy``)."""
        if self.n_queries is not None and len(self.state.answers) >= self.n_queries:
            return True
        stop = self.settings.stop_entropy
        return (
            stop is not None
            and self.max_entropy is not None
            and self.answered_at_fit == len(self.state.answers)
            and self.max_entropy < float(stop)
        )

    # --- answers -------------------------------------------------------------------------------------------------
    def answer(self, annotator: str, i: int, j: int, answer: str) -> dict[str, Any]:
        """Store ``annotator``'s answer about the pair they hold and use it. Returns the stored record.

        Raises :class:`~jaxclust.errors.QuestionError` (nothing stored) when they do not hold ``(i, j)``, and
        ``InvalidInputError`` for an answer that is not one of :data:`ANSWERS`.
        """
        who = check_annotator(annotator)
        if answer not in ANSWERS:
            raise InvalidInputError(f"answer: expected one of {', '.join(ANSWERS)}, got {answer!r}")
        i, j = check_index(i, self.n, "i"), check_index(j, self.n, "j")  # int(3.9) would answer about item 3
        p = (min(i, j), max(i, j))
        with self.lock:
            held = self._held.get(who)
            if held is None or (held.i, held.j) != p:
                if self._last.get(who) == p:
                    raise QuestionError(
                        f"answer: {who} already answered the pair {p[0]}-{p[1]}; nothing more was stored",
                        already=True,
                    )
                mine = "none" if held is None else f"{held.i}-{held.j}"
                raise QuestionError(
                    f"answer: {who} was not asked about the pair {p[0]}-{p[1]} (the pair they hold: {mine}); "
                    "nothing was stored"
                )
            return self._answer_held(who, p, answer, who)

    def _answer_held(self, who: str, p: tuple[int, int], answer: str, name: str) -> dict[str, Any]:
        """Store and use the answer of ``who`` about ``p``, the pair they hold, under ``name`` (lock held)."""
        others = self._by_pair.get(p, {})
        rec = {"i": p[0], "j": p[1], "answer": answer, "annotator": name}
        if others and answer != "unknown":  # a second opinion: the measured agreement changes
            stored = self.store.append(*p, answer, kept=True, annotator=name)
            self._release(who)
            self._rebuild()
        else:
            kept, _ = self.core.answer(rec, self._rate(rec, None))
            try:
                stored = self.store.append(*p, answer, kept=kept, annotator=name)
            except BaseException:
                self._rebuild()  # the state must not hold an answer the store lacks
                raise
            if answer != "unknown":
                self._by_pair.setdefault(p, {})[name] = answer
            self._second.pop(p, None)
            if answer != "unknown" and not others and self._owed(p, {name: answer}):
                self._second[p] = None
            self._release(who)
            self._wake.set()
        self._last[who] = p
        return stored

    def _release(self, who: str) -> None:
        q = self._held.pop(who, None)
        self._held_at.pop(who, None)
        if q is not None and self._holder.get((q.i, q.j)) == who:
            self._holder.pop((q.i, q.j), None)
        if q is not None and q.kind == "new":
            self.store.release(who)

    def waiting(self) -> str:
        """Why :meth:`question` has nothing for an annotator while the session is not done, in words."""
        with self.lock:
            held = len(self._holder)
        return (
            f"every open pair is held by other annotators ({held} held; a pair not answered within "
            f"{self.hold_seconds:g} s goes to the next who asks)"
        )

    def last_answer(self, annotator: str) -> dict[str, Any] | None:
        """``annotator``'s latest answer in effect (the one :meth:`undo` would undo), None when they have none."""
        who = check_annotator(annotator)
        with self.lock:
            for rec in reversed(self.store.records):
                if rec.get("annotator") == who:
                    return rec
        return None

    def skip(self, annotator: str) -> None:
        """Give back the question ``annotator`` holds without answering it (another annotator may get it)."""
        with self.lock:
            self._release(check_annotator(annotator))

    def undo(self, annotator: str, pair: tuple[int, int] | None = None) -> dict[str, Any] | None:
        """Undo ``annotator``'s latest answer in effect (an undo record; nothing is deleted) and hand its pair
        back to them. Returns the undone record, None when they have none.

        ``pair``: undo only if that latest answer is about ``pair`` (either order), else nothing (None): a request
        sent twice undoes one answer, as an answer sent twice stores one."""
        who = check_annotator(annotator)
        with self.lock:
            if pair is not None:
                last = self.last_answer(who)
                if last is None or (last["i"], last["j"]) != (min(pair), max(pair)):
                    return None
            undone = self.store.undo(who)
            if undone is not None:
                self._last.pop(who, None)
                self._release(who)
                self._rebuild()
                self._given_back[who] = (undone["i"], undone["j"])
            return undone

    # --- the model ----------------------------------------------------------------------------------------------
    def _excluded(self) -> set[tuple[int, int]]:
        held = {p for p in self._holder if not self._free(p)}
        return self.state.excluded() | set(self._by_pair) | held

    def _rank(self, fit, constraints, exclude) -> tuple[list[tuple[int, int]], float | None]:
        """The pool: the strategy's best pairs under ``fit``'s samples (random pairs before the first fit), and
        the highest link entropy among the unknown pairs when the strategy knows it."""
        if fit is None:
            return random_pairs(
                self.seed + 1 + len(exclude), self.n, self.pool_size, constraints, exclude
            ), None
        need = self.settings.stop_entropy is not None
        pairs, h = self.core.rank(
            self.pool_size, exclude, self.seed + 2 + self.n_fits, need, fit, constraints
        )
        return [(min(i, j), max(i, j)) for i, j in pairs], h

    def refit(self) -> bool:
        """One fit to the answers in effect now (warm from the last one) and a new pool. Returns False when the
        samples already saw every answer. The background thread calls this; tests may call it directly."""
        with self.lock:
            news = self.store.refresh() if self.store.shared else None
            if (news is not None and (news.answers or news.undone)) or (
                self.machine is not None and self.machine.recalibrate(self._by_pair)  # its answers weigh anew
            ):
                self._rebuild()
            n_answers = len(self.state.answers)
            if n_answers == self.answered_at_fit:
                return False
            constraints, exclude = self.state.constraints, self._excluded()
            last, seed = self.core.fit, self.core.next_seed()
        t0 = time.perf_counter()
        init, comps, chains, log_w = (None,) * 4 if last is None else self.core.carried(constraints, seed)
        fit = self.core.draw(constraints, seed, init, warm_components=comps, chains=chains, log_weights=log_w)
        pool, h = self._rank(fit, constraints, exclude)  # the pairs answered since: see _open
        with self.lock:
            self.core.install(fit)
            self.answered_at_fit = n_answers
            self._pool, self.max_entropy = pool, h
            self.fit_seconds = time.perf_counter() - t0
            self.fit_error = None
        self._machine_wake.set()
        return True

    def start(self) -> TeamSession:
        """Start the background threads (idempotent): one refits when answers came in, one has the machine answer."""
        if not self._threads:
            loops = [("refit", self.refit, self._wake, lambda e: setattr(self, "fit_error", e))]
            if self.machine is not None:
                loops.append(("machine", self.machine_step, self._machine_wake, self.machine.failed))
            for name, *args in loops:
                thread = threading.Thread(
                    target=self._run, args=args, name=f"jaxclust-team-{name}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
        return self

    def _run(self, step, wake: threading.Event, failed) -> None:
        """Call ``step`` until the session closes, waiting for ``wake`` (at most 1 s) while it has nothing to do."""
        while not self._stop.is_set():
            try:
                busy = step()
            except Exception as exc:  # noqa: BLE001 - a failure must not end the session; it is reported
                failed(f"{type(exc).__name__}: {exc}")
                busy = False
            if not busy:
                wake.wait(timeout=1.0)
                wake.clear()

    def machine_step(self) -> bool:
        """The machine answers the best open pair of the pool, or hands it to people. Returns False when it
        had nothing to do (or failed, or has stopped). Its thread calls this; tests may call it directly."""
        m = self.machine
        if m is None or m.stopped is not None:
            return False
        with self.lock:
            q = None if self.done else self._from_pool(m.name)
            samples = self.state.samples
        if q is None:
            return False
        p, name, verdict, reason = (q.i, q.j), m.name, None, None
        try:
            name, verdict, reason = m.route(p, samples)  # a request: outside the lock
            m.error = None
        except SessionStopped as exc:
            m.stopped = str(exc)
        except Exception as exc:  # noqa: BLE001 - an outage must not end the session; people go on
            m.failed(f"{type(exc).__name__}: {exc}")
        with self.lock:
            if self._held.get(m.name) != q:  # the hold expired and the pair went to a person
                return verdict is not None
            if verdict is not None and reason is None:
                self._answer_held(m.name, p, verdict, name)  # held under its name, stored under its kind's
                return True
            self._release(m.name)
            if reason is not None:
                m.for_people[p] = reason
            return verdict is not None

    def close(self, timeout: float | None = 60.0) -> None:
        """Stop the background threads (after the fit or request under way); the store stays open (idempotent)."""
        self._stop.set()
        self._wake.set()
        self._machine_wake.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []

    # --- what a page shows ----------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts for a progress display: ``n_answers`` (in effect), ``n_queries``, ``per_annotator``
        (answers in effect each), ``n_second_owed``, ``n_fits``, ``fitting_behind`` (answers the samples have
        not seen), ``fit_seconds``, ``fit_error``, ``done``, ``n_clusters``, ``conflicts`` (messages), ``machine``
        (:meth:`TeamMachine.status`, None without one), and with gold labels ``v_beta``."""
        with self.lock:
            per = dict(Counter(rec.get("annotator") or UNNAMED for rec in self.state.answers))
            out = {
                "n_answers": len(self.state.answers),
                "n_queries": self.n_queries,
                "per_annotator": per,
                "n_second_owed": len(self._second),
                "n_fits": self.n_fits,
                "fitting_behind": None
                if self.answered_at_fit < 0
                else len(self.state.answers) - self.answered_at_fit,
                "fit_seconds": self.fit_seconds,
                "fit_error": self.fit_error,
                "done": self.done,
                "n_clusters": None if self.labels_ is None else int(len(np.unique(self.labels_))),
                "conflicts": [c["message"] for c in self.state.conflicts],
                "machine": None if self.machine is None else self.machine.status(),
            }
            if self.gold is not None and self.labels_ is not None:
                out["v_beta"] = float(v_beta(self.gold, self.labels_))
            return out
