"""The active-learning loop: fit, pick uncertain pairs, ask the oracle, add constraints, refit (host side).

The loop is plain Python on the host (it waits for people); the heavy parts, the sampler and the blockwise
link-entropy sweep, are jitted JAX functions called once per round.

Warm start. After the first round each refit starts every chain from its last state in the previous round
(``init_labels=previous.final_labels_``, repaired by the sampler to satisfy the new constraints) and runs
``warm_burnin`` burn-in sweeps instead of the model's full ``n_burnin``. This is a valid MCMC initialisation:
the constrained Gibbs kernel leaves the new constrained posterior invariant whatever the starting state, so
the chain's stationary law is unchanged; a start that is already near the old posterior (which differs from
the new one by a few constraints) just needs fewer sweeps to forget its start. Set ``warm_start=False`` to
refit from scratch. For a model that samples the classes the answers are about (``propagation="pairs"``), each
chain carries a weight, multiplied at each refit by the likelihood ratio of the answers since; the samples are
read at these weights, and the chains are resampled when the weights become too uneven
(:mod:`jaxclust.active.resample`), so that chains the answers rule out give way to copies of those they favour.

The refit budget. A person waits for every refit, so the session, not the model, sets its length: a warm refit
keeps the model's number of samples per chain but takes them on consecutive sweeps (``warm_thin=1``), where a
one-off fit spaces them out. Consecutive samples of a chain are more alike, and the link entropy reads them
across chains and samples alike; what the questions lose by it is measured on the active suite
(``experiments/README.md``), what the person gains is a shorter refit of ``DPMM()`` (10 + 20 sweeps,
not 10 + 100).

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
(``stop_reason_`` says which). Link entropy only measures how much the samples disagree: when every sample
keeps two sub-types of one class apart, it is 0 across them. The ``"explore"`` strategy therefore never
stops as confident while a belief of that kind is untested (two components in different classes that no
answer has compared, a component's join to its class that no question tested, a large component no answer
has shown to be one class).

Answers reach whole components. With ``propagation="classes"`` (the default for a model of components, such as
the DPMM) the samples the selection reads,
``labels_`` and the scores are classes made of components (:mod:`jaxclust.active.classes`), so one "same"
answer about two items of two components joins the two components, and a "different" answer inside one
component splits it.
"""

from __future__ import annotations

import copy
import inspect
import sys
from typing import Any

import numpy as np

from jaxclust.active.core import RateRule, SessionSettings, fit_parameters
from jaxclust.active.oracles import SessionStopped, UndoLast, ask
from jaxclust.active.replies import WORDS
from jaxclust.active.rules import LEARNER_RULES, SESSION_RULES
from jaxclust.active.session import Outcome, Session, score_samples
from jaxclust.active.state import describe_conflict
from jaxclust.active.store import AnswerStore, check_annotator, data_fingerprint, default_annotator
from jaxclust.constraints import Constraints, as_constraints
from jaxclust.errors import InvalidInputError
from jaxclust.validation import (
    Function,
    PerKey,
    check_array,
    check_labels,
    check_rule,
    seed_from,
    validate_params,
)

__all__ = ["ActiveLearner", "score_samples", "data_fingerprint", "describe_conflict"]


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


def check_oracle(oracle: Any) -> None:
    """``oracle`` can answer a pair: a callable ``oracle(i, j)`` or an object whose ``answer(i, j)`` is one;
    ``InvalidInputError`` naming what is wrong otherwise."""
    if oracle is None:
        raise InvalidInputError(
            "oracle: run needs an oracle that answers pairs, got None (GoldOracle(labels) for an experiment, "
            "a function (i, j) -> 'must' / 'cannot' / 'unknown', or iter_questions to answer them yourself)"
        )
    fn = oracle.answer if hasattr(oracle, "answer") else oracle
    what = f"{type(oracle).__name__}.answer" if hasattr(oracle, "answer") else f"{type(oracle).__name__}"
    if not callable(fn):
        raise InvalidInputError(f"oracle: {what} is not callable; expected answer(i, j)")
    try:
        inspect.signature(fn).bind(0, 1)
    except TypeError as exc:
        raise InvalidInputError(f"oracle: {what} cannot be called with a pair (i, j): {exc}") from None
    except ValueError:  # no signature to read (a builtin): calling it will tell
        pass


class ActiveLearner:
    """Active constraint selection around any model with the DPMM's ``fit``/``samples_`` interface.

    Parameters
    ----------
    model : estimator
        Duck-typed: ``fit(X, constraints=..., init_labels=..., n_burnin=...)`` setting ``samples_`` (S, n) and
        ``final_labels_`` (n_chains, n); e.g. :class:`jaxclust.DPMM`. It is cloned, never modified.
        ``init_labels``/``n_burnin`` are passed only for warm starts.
    oracle : callable or object with ``answer(i, j)``
        Returns ``"must"``, ``"cannot"`` or ``"unknown"``; may raise ``SessionStopped`` (end the session) or
        ``UndoLast`` (undo its annotator's last answer in the ``store`` and go on from before it; the oracle's
        ``undone(record, message)``, when it has one, is told what was undone).
    strategy : {"explore", "batch", "entropy", "naive_batch", "random"}
        See :mod:`jaxclust.active.selection`. ``"explore"`` (default) first tests what the model is sure of
        (are two components it keeps apart one class? was a component joined to its class rightly? is a large
        component one class?), then asks the pair of highest link entropy; for a model that samples classes of
        components (``NestedDPMM``) these are the components and classes of the sample ``labels_`` is;
        ``"batch"`` is the batch method of Vlachos et al. (2010), the previous default.
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
        ``n_burnin`` is ``None``, i.e. its own default). A model whose ``fit`` takes ``n_split_merge``
        (:class:`~jaxclust.NestedDPMM`) also makes a quarter of its own proposals per sweep in a warm refit
        (:meth:`~jaxclust.active.core.SessionSettings.split_merge_for`).
    warm_thin : int
        Sweeps between the kept samples of a warm refit (for a model whose ``fit`` takes ``thin``, e.g.
        :class:`~jaxclust.DPMM` and :class:`~jaxclust.NestedDPMM`); default 1: a warm refit of ``DPMM()`` runs
        10 + 20 sweeps where its first fit runs 100 + 20 x 5. The session, not the model, sets what a person
        waits for after each answer (see the module docstring).
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
        Who answers: stored with every new answer (default: the oracle's ``annotator`` attribute when it has one,
        e.g. :class:`~jaxclust.active.chat.ChatOracle`'s model and prompt, else the operating-system user name).
    error_rate : float or dict
        How often an answer is wrong. 0 (default): every answer is a hard constraint, and an answer that
        contradicts earlier ones is dropped (recorded, and reported in ``conflicts_``). In ``(0, 1/2]``: every
        answer is an observation wrong with this probability (:meth:`jaxclust.Constraints.with_answer`): it
        weighs the posterior instead of fixing it, contradicting answers are all kept as evidence, and in the
        batch method a sample that disagrees with an answer keeps weight ``eps / (1 - eps)`` instead of 0. A
        dict gives a rate per annotator (``{"alice": 0.05, "bob": 0.2}``; the key ``"*"`` covers everyone
        else). A rate may also be an object that gives one per answer, ``error_rate(answer)``: a chat model's
        :class:`~jaxclust.active.chat.MachineRates`, whose "same" and "different" are wrong at different rates.
    propagation : {"classes", "components", "pairs"} or None
        How far an answer reaches. None (default): ``"pairs"`` for a model whose samples are classes already
        (its ``samples_classes`` is true, e.g. :class:`~jaxclust.NestedDPMM`), else ``"classes"``.
        ``"classes"``: each retained sample is read as classes made of
        components (:mod:`jaxclust.active.classes`): a "same" answer about items of two components joins
        the two components, a "different" answer keeps their classes apart, and a "different" answer about
        two items of one component splits it between them (each of its items follows the nearest answered
        item); the link entropy, ``labels_`` and the scores are those of the classes. ``"components"``: the
        same with components kept whole and no question about joins. ``"pairs"``: the samples are the
        model's components, and an answer constrains its two items only (the sampler
        satisfies a must-link across two components by moving one item).

    Attributes
    ----------
    samples_ : ndarray (S, n)
        The partitions the session's questions are about now (classes, or components with
        ``propagation="pairs"``); an oracle with an ``observe(samples)`` method is given them before each
        question.
    labels_ : ndarray (n,)
        The session's clustering: of the retained samples (their classes; their components with
        ``propagation="pairs"``), the one closest to the others in Binder loss, i.e. the number of item pairs
        two partitions disagree on (:func:`jaxclust.coclustering.least_squares_sample`, Dahl 2006).
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
    stop_detail_ : str or None
        What the oracle said when it ended the session (its ``SessionStopped`` message, e.g. ``"end of
        input"`` or ``"quit"``).
    stop_reason_ : str
        Why :meth:`run` returned: ``"done"`` (``n_queries`` answers), ``"stopped"`` (the oracle raised
        ``SessionStopped``), ``"confident"`` (see ``stop_entropy``), ``"exhausted"`` (no unknown pair left)
        or ``"closed"`` (an :meth:`iter_questions` generator closed by its caller).
    max_entropy_ : float or None
        Highest link entropy among unknown pairs when the session ended (None if not computed).
    """

    #: One rule per parameter (see :func:`jaxclust.validation.validate_params`), those of the session shared with
    #: the apps (:data:`jaxclust.active.rules.LEARNER_RULES`); the model and the oracle are checked where used.
    _parameter_constraints = {
        **LEARNER_RULES,
        "error_rate": PerKey(RateRule(), "annotator"),
        "status": Function(none=True),
    }

    def __init__(
        self,
        model,
        oracle,
        strategy: str = "explore",
        batch_size: int = 1,
        min_samples: int = 10,
        random_state=0,
        store=None,
        warm_start: bool = True,
        warm_burnin: int | None = None,
        warm_thin: int = 1,
        block_size: int | None = None,
        progress: bool = True,
        stop_entropy: float | None = None,
        status=None,
        annotator: str | None = None,
        error_rate=0.0,
        propagation: str | None = None,
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
        self.warm_thin = warm_thin
        self.block_size = block_size
        self.progress = progress
        self.stop_entropy = stop_entropy
        self.status = status
        self.annotator = annotator
        self.error_rate = error_rate
        self.propagation = propagation

    # --- the session's settings -----------------------------------------------------------------------------
    def session_settings(self) -> SessionSettings:
        """The learner's parameters, checked, as the frozen value a session runs on
        (:class:`~jaxclust.active.core.SessionSettings`); ``InvalidInputError`` naming the first bad one."""
        checked = validate_params(self)
        fit = getattr(self.model, "fit", None)
        if not callable(fit) or "constraints" not in fit_parameters(fit):
            raise InvalidInputError(
                f"model: {type(self.model).__name__} cannot be refitted under answers (its fit takes no "
                "'constraints'); use a model that samples partitions under constraints, e.g. jaxclust.DPMM"
            )
        if checked["propagation"] is None:  # a model that samples classes is read as it is
            checked["propagation"] = "pairs" if getattr(self.model, "samples_classes", False) else "classes"
        return SessionSettings(random_state=self.random_state, **checked)

    def _copy(self, out: Outcome) -> None:
        """The attributes follow the session (:class:`~jaxclust.active.session.Outcome`)."""
        self.model_, self.history_, self.answers_, self.conflicts_ = (
            out.model,
            out.history,
            out.answers,
            out.conflicts,
        )
        self.constraints_, self.dropped_, self.unknown_ = out.constraints, out.dropped, out.unknown
        if out.labels is not None:
            self.labels_ = out.labels
        if out.samples is not None:
            self.samples_ = out.samples
        self.stopped_, self.stop_detail_, self.max_entropy_ = out.stopped, out.stop_detail, out.max_entropy
        if out.stop_reason is not None:
            self.stop_reason_ = out.stop_reason

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
        constraints : Constraints, dict or (must_link, cannot_link), optional
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
        check_oracle(self.oracle)
        while True:
            session = self.iter_questions(X, n_queries, eval_labels, constraints)
            try:
                pair = next(session)
                while True:
                    try:
                        if callable(observe := getattr(self.oracle, "observe", None)) and hasattr(
                            self, "samples_"
                        ):
                            observe(self.samples_)  # what the model believes now (e.g. for MachineFirst)
                        reply = ask(self.oracle, *pair)
                    except SessionStopped as exc:
                        pair = session.throw(exc)
                    except UndoLast:
                        if self.store is not None:
                            break  # the session is closed, the answer undone, and the session resumed
                        self._tell_undone(
                            None, "Undo needs an answer store (ActiveLearner(store=...)): nothing undone."
                        )
                    else:
                        pair = session.send(reply)
            except StopIteration as end:
                return end.value
            finally:
                session.close()
            self._undo_last()

    def _undo_last(self) -> None:
        """Undo the annotator's latest answer in the store (the oracle raised ``UndoLast``) and tell the oracle."""
        who = self._annotator()
        if isinstance(self.store, AnswerStore):
            undone = self.store.undo(who)
        else:
            with AnswerStore(self.store) as store:
                undone = store.undo(who)
        if undone is None:
            self._tell_undone(None, f"Nothing to undo: {who} has no answer in the store.")
        else:
            what = WORDS[undone["answer"]]
            self._tell_undone(
                undone, f"Undone: {undone['i']}-{undone['j']} ({what}); asking again from there."
            )

    def _tell_undone(self, record: dict | None, message: str) -> None:
        tell = getattr(self.oracle, "undone", None)
        if callable(tell):
            tell(record, message)

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
        settings = self.session_settings()
        n_queries = check_rule(SESSION_RULES["n_queries"], n_queries, "n_queries")
        X = check_array(X, name="X", min_rows=2)
        n = X.shape[0]
        labels = None if eval_labels is None else check_labels(eval_labels, n=n, name="eval_labels")
        if constraints is not None and not isinstance(constraints, Constraints):
            constraints = as_constraints(constraints, n, where="ActiveLearner.run")
        if constraints is not None and constraints.n != n:
            raise InvalidInputError(f"constraints: built for {constraints.n} items, X has {n} rows")
        return self._session(settings, X, int(n_queries), labels, constraints, self._annotator())

    def _annotator(self) -> str:
        """Who answers: ``annotator``, else the oracle's own name (``oracle.annotator``, e.g. a chat model and its
        prompt), else the operating-system user."""
        own = getattr(self.oracle, "annotator", None)
        return (
            check_annotator(self.annotator)
            or (check_annotator(own) if isinstance(own, str) else None)
            or (default_annotator())
        )

    def _session(
        self,
        settings: SessionSettings,
        X,
        n_queries: int,
        labels,
        initial: Constraints | None,
        annotator: str,
    ):
        meta = {"n": X.shape[0], "fingerprint": data_fingerprint(X)}
        store, own_store = self.store, False
        if store is not None and not isinstance(store, AnswerStore):
            store, own_store = AnswerStore(store, meta=meta), True
        # the model's draws follow the model's own seed (so runs that differ only in the selection strategy
        # share their first fit); the learner's random_state drives the random strategy
        params = self.model.get_params(deep=False) if hasattr(self.model, "get_params") else {}
        model_rs = params.get("random_state")
        base_seed = seed_from(model_rs) if isinstance(model_rs, int | np.integer | None) else 0
        try:
            if store is not None and not own_store:
                store.check_meta(meta)
            model = _clone(self.model)
            session = Session(
                settings, model, X, n_queries, labels, initial, store, annotator, base_seed, self._copy
            )
            return (yield from session.run())
        finally:
            if own_store:
                store.close()
