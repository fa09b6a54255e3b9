"""The session core: the one state machine that every way of running an active-learning session drives.

A :class:`SessionCore` holds a model, the data, the answers in effect (:class:`~jaxclust.active.state.SessionState`)
and the model's latest fit. Its transitions:

* **answer** (:meth:`SessionCore.answer`): one answer in: a constraint, an observation with an error rate, or
  "don't know".
* **rebuild** (:meth:`SessionCore.rebuild`): the answers in effect changed other than by one more (an undo, a
  disagreement, answers another process stored): the state is rebuilt from them.
* **refit** (:meth:`SessionCore.draw`, then :meth:`SessionCore.install`): a model fit under the constraints in
  effect, the k-th seeded ``base_seed + 7919 k`` and warm-started from the chains of the previous one (for a
  model that samples classes, weighted by what the answers since say of them: :meth:`SessionCore.carried`). ``draw``
  leaves the state alone, so a driver may fit outside its lock; ``install`` makes the fit's samples the ones
  questions are about.
* **next questions** (:meth:`SessionCore.rank`): up to ``k`` pairs the strategy picks from the samples, best
  first, and the highest link entropy among the unknown pairs when the strategy knows it.

Two drivers use it, and only through these: :class:`~jaxclust.active.session.Session` (one annotator, in
rounds: :meth:`ActiveLearner.run <jaxclust.active.ActiveLearner.run>`, ``iter_questions``, the terminal and the
notebook) and :class:`~jaxclust.active.team.TeamSession` (a team, with a pool of questions and a background
refit). What a session needs of the learner is one frozen value, :class:`SessionSettings`; the core never reads
or writes the learner.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from jaxclust.active.classes import class_samples
from jaxclust.active.entropy import agreeing_samples
from jaxclust.active.resample import carry, weighted_rows
from jaxclust.active.selection import Round, pick
from jaxclust.active.state import SessionState, apply_answer, replay
from jaxclust.coclustering import least_squares_sample
from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError
from jaxclust.validation import Real

__all__ = [
    "SessionSettings",
    "Fit",
    "SessionCore",
    "fit_model",
    "check_samples",
    "is_rate_model",
    "RateRule",
    "FIT_SEED_STRIDE",
    "fit_parameters",
]

#: The k-th fit of a session is seeded ``base_seed + FIT_SEED_STRIDE * k``.
FIT_SEED_STRIDE = 7919


@dataclass(frozen=True)
class SessionSettings:
    """What a session needs of its learner (the parameters of :class:`~jaxclust.active.ActiveLearner`, checked)."""

    strategy: str = "explore"
    batch_size: int = 1
    min_samples: int = 10
    random_state: Any = 0
    warm_start: bool = True
    warm_burnin: int | None = None
    warm_thin: int = 1
    block_size: int | None = None
    stop_entropy: float | None = None
    error_rate: Any = 0.0
    propagation: str = "classes"
    progress: bool = False
    status: Callable[[str], Any] | None = None

    def rate_of(self, who: str | None, answer: str | None = None) -> float:
        """The error rate of ``answer`` by ``who`` (see ``ActiveLearner``'s ``error_rate``): a rate given as an
        object (e.g. :class:`~jaxclust.active.chat.MachineRates`) is asked ``error_rate(answer)`` for
        ``"must"`` and ``"cannot"``; "don't know" has none."""
        rates = self.error_rate
        if isinstance(rates, Mapping):
            if who in rates:
                rates = rates[who]
            elif "*" in rates:
                rates = rates["*"]
            else:
                raise InvalidInputError(
                    f"error_rate: no rate for annotator {who!r} (give one, or a '*' entry for everyone else)"
                )
        if is_rate_model(rates):
            return float(rates.error_rate(answer)) if answer in ("must", "cannot") else 0.0
        return float(rates)

    def burnin_for(self, model) -> int:
        """Burn-in sweeps of a warm refit of ``model``: ``warm_burnin``, by default a fifth of the model's own
        (at least 10)."""
        burn = self.warm_burnin
        if burn is None:
            full = getattr(model, "n_burnin", None)  # None: the model picks its own (e.g. DPMM's defaults)
            burn = max(10, int(full if full is not None else 50) // 5)
        return int(burn)

    def split_merge_for(self, model) -> int | None:
        """Metropolis-Hastings proposals of each kind per sweep of a warm refit, for a model whose ``fit`` takes
        ``n_split_merge`` (:class:`~jaxclust.NestedDPMM`): a quarter of the model's own (at least one, none when
        it has none). A warm refit starts near the last fit's posterior; the proposals that move whole classes
        and components are what a refit costs (``benchmarks/RESULTS.md``). None (the model's own number) for
        other models and for one that does not say its number."""
        full = getattr(model, "n_split_merge", None)
        if full is None or "n_split_merge" not in fit_parameters(model.fit):
            return None
        return min(int(full), max(1, int(full) // 4))

    def digest(self, model, base_seed: int) -> str:
        """Digest of everything that shapes a session's questions; a stored fit is reused only when it matches."""
        params = model.get_params(deep=False) if hasattr(model, "get_params") else {}
        desc = {
            "strategy": self.strategy,
            "batch_size": int(self.batch_size),
            "min_samples": int(self.min_samples),
            "random_state": repr(self.random_state),
            "warm_start": bool(self.warm_start),
            "warm_burnin": self.burnin_for(model),
            "warm_thin": int(self.warm_thin),
            "stop_entropy": None if self.stop_entropy is None else float(self.stop_entropy),
            "error_rate": _described(self.error_rate),
            "propagation": self.propagation,
            "base_seed": int(base_seed),
            "model": type(model).__qualname__,
            "params": repr(sorted((k, v) for k, v in params.items() if k != "random_state")),
        }
        split = self.split_merge_for(model)
        if split is not None:  # only models that take it: the digests of the others are unchanged
            desc["warm_split_merge"] = split
        return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:16]


def is_rate_model(value: Any) -> bool:
    """Whether ``value`` gives error rates per answer (has a callable ``error_rate(answer)``) rather than being
    one."""
    return callable(getattr(value, "error_rate", None))


class RateRule(NamedTuple):
    """A validation rule: an error rate in [0, 1/2], or an object that gives one per answer (``error_rate``)."""

    def want(self) -> str:
        return f"{Real(0.0, 0.5).want()} or an object with error_rate(answer) (e.g. MachineRates)"

    def check(self, value: Any) -> Any:
        if is_rate_model(value):
            return value
        return Real(0.0, 0.5).check(value)


def _described(rates: Any) -> Any:
    """``error_rate`` for the digest: numbers as floats, a rate model by its ``repr`` (its counts)."""
    if isinstance(rates, Mapping):
        return {str(k): _described(v) for k, v in rates.items()}
    return repr(rates) if is_rate_model(rates) else float(rates)


class Fit(NamedTuple):
    """One model fit of a session.

    ``samples`` (S, n): the partitions questions are about (classes made of components unless
    ``propagation="pairs"``); ``components`` (n,): the model's best sample of components; ``labels`` (n,): the
    row of ``samples`` closest to the others in Binder loss; ``final`` (C, n) or None: the chains' last states,
    to warm-start the next fit; ``seed``, ``warm`` and ``n_burnin`` (the burn-in of a warm fit, else None): how
    it was made; ``final_components`` (C, n) or None: the components inside ``final``'s classes, for a model
    whose samples are classes of components (its ``final_components_``, e.g. :class:`~jaxclust.NestedDPMM`);
    ``classes`` (n,) or None: for such a model read as it samples (``propagation="pairs"``), the classes of the
    sample that ``components`` comes from, so that questions can test its components' classes; ``constraints``:
    what it was fitted under; ``chains`` (C,) or None: for a warm fit whose chains were resampled
    (:func:`~jaxclust.active.resample.carry`), the previous fit's chain each chain started from;
    ``log_weights`` (C,) or None (equal): the chains' weights, at which ``samples`` read them."""

    samples: np.ndarray
    components: np.ndarray
    labels: np.ndarray
    final: np.ndarray | None
    seed: int
    warm: bool
    n_burnin: int | None
    final_components: np.ndarray | None = None
    classes: np.ndarray | None = None
    constraints: Constraints | None = None
    chains: np.ndarray | None = None
    log_weights: np.ndarray | None = None


def fit_parameters(fn) -> set[str]:
    """The names a model's ``fit`` takes by keyword; ``{"constraints"}`` when it takes ``**kwargs`` (nothing more
    is assumed of it)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return {"constraints"}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return {"constraints"}
    return {p.name for p in params}


def check_samples(model: Any, n: int) -> np.ndarray:
    """The fitted ``model``'s ``samples_`` (S, n) as integers: at least one partition of the ``n`` items, every
    label a whole number; ``InvalidInputError`` naming the model otherwise (questions are asked about these
    partitions, so none may come from anything but the model)."""
    name = type(model).__name__
    if not hasattr(model, "samples_"):
        raise InvalidInputError(
            f"model: {name}.fit set no samples_; the learner asks about the partitions a model samples (S, n), "
            "e.g. jaxclust.DPMM"
        )
    try:
        samples = np.asarray(model.samples_, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"model: {name}.samples_ is not an array of labels ({exc})") from None
    if samples.ndim != 2 or samples.shape[1] != n or samples.shape[0] == 0:
        raise InvalidInputError(
            f"model: {name}.samples_ has shape {samples.shape}, expected (S, {n}) with at least one sample"
        )
    bad = ~np.isfinite(samples) | (samples != np.round(samples))
    if bad.any():
        s, i = np.argwhere(bad)[0]
        raise InvalidInputError(
            f"model: {name}.samples_[{s}, {i}] is {float(samples[s, i])!r}, not a cluster label (a whole number)"
        )
    return samples.astype(np.int64)


def fit_model(
    settings: SessionSettings,
    model,
    X: np.ndarray,
    constraints: Constraints,
    seed: int,
    warm_from=None,
    n_burnin=None,
    warm_components=None,
    chains=None,
    log_weights=None,
) -> Fit:
    """Fit ``model`` (modified in place) to ``X`` (n, D) under ``constraints``, seeded ``seed`` and started from
    ``warm_from`` (C, n) when given and ``settings.warm_start`` (with the components ``warm_components`` (C, n)
    inside those labels, when given and the model's ``fit`` takes ``init_components``), and read its samples as
    ``settings.propagation`` says. A warm refit runs ``n_burnin`` (default :meth:`SessionSettings.burnin_for`)
    burn-in sweeps and keeps the model's number of samples ``settings.warm_thin`` apart, when the model's ``fit``
    takes ``thin``. ``chains``: recorded in the fit (where ``warm_from`` came from); ``log_weights`` (C,): the
    chains' weights, the samples (chain-major) read at them
    (:func:`~jaxclust.active.resample.weighted_rows`)."""
    if hasattr(model, "set_params") and "random_state" in model.get_params(deep=False):
        model.set_params(random_state=seed)
    kwargs: dict[str, Any] = {"constraints": constraints}
    warm = warm_from is not None and settings.warm_start
    burn = None
    if warm:
        kwargs["init_labels"] = np.asarray(warm_from)
        burn = settings.burnin_for(model) if n_burnin is None else int(n_burnin)
        kwargs["n_burnin"] = burn
        takes = fit_parameters(model.fit)
        if "thin" in takes:
            kwargs["thin"] = settings.warm_thin
        if "n_split_merge" in takes:
            kwargs["n_split_merge"] = settings.split_merge_for(model)
        if warm_components is not None and "init_components" in takes:
            kwargs["init_components"] = np.asarray(warm_components)
    model.fit(X, **kwargs)
    samples = check_samples(model, X.shape[0])
    weigh = None if log_weights is None or not warm else weighted_rows(len(samples), log_weights, seed)
    if weigh is not None:
        samples = samples[weigh]
    best = getattr(model, "labels_", None)
    components = samples[0] if best is None else np.asarray(best)
    classes = None
    if settings.propagation != "pairs":
        samples = class_samples(X, samples, constraints, settings.propagation == "classes")
    at = least_squares_sample(samples)
    sampled = getattr(model, "components_", None) if getattr(model, "samples_classes", False) else None
    if settings.propagation == "pairs" and np.shape(sampled) == samples.shape:
        sampled = np.asarray(sampled) if weigh is None else np.asarray(sampled)[weigh]
        components, classes = sampled[at], samples[at]  # labels_'s sample: components in classes
    final = getattr(model, "final_labels_", None)
    final_components = getattr(model, "final_components_", None)
    return Fit(
        samples,
        components,
        np.asarray(samples[at]),
        None if final is None else np.asarray(final),
        int(seed),
        bool(warm),
        burn,
        None if final_components is None else np.asarray(final_components),
        classes,
        constraints,
        None if chains is None or not warm else np.asarray(chains),
        None if weigh is None else np.asarray(log_weights, dtype=np.float64),
    )


class SessionCore:
    """The state machine of one session (see the module docstring).

    Parameters
    ----------
    settings : SessionSettings
    model : estimator
        Refitted in place (give the session its own copy).
    X : ndarray, shape (n, D)
        Checked features.
    initial : Constraints or None
        The constraints before any answer. Its hard pairs are re-read with ``on_conflict="drop"`` (a pair that
        contradicts the ones before it is dropped, as a contradicting answer is); its answers with an error rate
        are kept as they are.
    base_seed : int
        Seed of the first fit.

    Attributes
    ----------
    state : SessionState
        The answers in effect and what they imply.
    fit : Fit or None
        The fit installed last (None before the first).
    """

    def __init__(
        self, settings: SessionSettings, model, X: np.ndarray, initial: Constraints | None, base_seed: int
    ):
        self.settings, self.model, self.X = settings, model, X
        self.base_seed = int(base_seed)
        given = () if initial is None else [*initial.pairs, *initial.answers]
        self.state = SessionState.start(Constraints.from_answers(X.shape[0], given, on_conflict="drop"))
        self.fit: Fit | None = None

    # --- answers ------------------------------------------------------------------------------------------
    def rate_of(self, who: str | None, answer: str | None = None) -> float:
        return self.settings.rate_of(who, answer)

    def answer(self, rec: dict, rate: float | None = None) -> tuple[bool, bool]:
        """Apply the answer ``rec`` (``i``, ``j``, ``answer``, ``annotator``) with error rate ``rate`` (by default
        its annotator's); returns ``(kept, changed)`` as :func:`~jaxclust.active.state.apply_answer`."""
        if rate is None:
            rate = self.rate_of(rec.get("annotator"), rec["answer"])
        return apply_answer(self.state, rec, rate)

    def rebuild(self, records: list[dict], rates: list[float] | None = None) -> None:
        """The state from ``records``, the answers in effect, in order (each with its rate in ``rates``, by
        default its annotator's); the samples are kept, marked stale."""
        self.state.reset()
        if rates is None:
            rates = [self.rate_of(r.get("annotator"), r["answer"]) for r in records]
        replay(self.state, records, rates)

    def rerate(self) -> bool:
        """The answers in effect again, when an error rate given as an object (a chat model's
        :class:`~jaxclust.active.chat.MachineRates`, which learns as answers arrive) now gives one of its soft
        answers another rate than it had when the answer came: every such answer then weighs what the rates say
        now, not what they said when it was given. Returns whether the constraints were rebuilt."""
        given = self.settings.error_rate
        if not any(is_rate_model(v) for v in (given.values() if isinstance(given, Mapping) else [given])):
            return False
        st = self.state
        rates = [self.rate_of(r.get("annotator"), r["answer"]) for r in st.answers]
        now = [
            rate for r, rate in zip(st.answers, rates, strict=True) if rate > 0 and r["answer"] != "unknown"
        ]
        held = [eps for *_, eps in st.constraints.answers]  # the session's soft answers come last, in order
        if held[len(held) - len(now) :] == now:
            return False
        self.rebuild([dict(r) for r in st.answers], rates)
        return True

    def agreement(self, rec: dict) -> np.ndarray:
        """Importance weight (S,) of each current sample given the answer ``rec``: 1 where it agrees, 0 (a hard
        answer) or ``eps / (1 - eps)`` (an answer wrong with probability eps) where it does not."""
        agree = np.asarray(agreeing_samples(self.state.samples, rec["i"], rec["j"], rec["answer"] == "must"))
        eps = self.rate_of(rec.get("annotator"), rec["answer"])
        return np.where(agree, 1.0, eps / (1.0 - eps)).astype(np.float32)

    # --- fits ---------------------------------------------------------------------------------------------
    def next_seed(self) -> int:
        """The seed of the next counted fit."""
        return self.base_seed + FIT_SEED_STRIDE * self.state.n_fits

    def draw(
        self,
        constraints: Constraints | None = None,
        seed: int | None = None,
        warm_from=None,
        n_burnin=None,
        warm_components=None,
        chains=None,
        log_weights=None,
    ) -> Fit:
        """A fit under ``constraints`` (default: those in effect); the state is left alone. Without ``seed``:
        the next seed, warm from the installed fit's chains carried over to ``constraints`` (:meth:`carried`;
        ``warm_from``, ``warm_components`` and ``n_burnin`` then override only when given). ``chains`` and
        ``log_weights``: where a given ``warm_from`` came from and the chains' weights (:class:`Fit`)."""
        cons = self.state.constraints if constraints is None else constraints
        if seed is None:
            seed = self.next_seed()
            if warm_from is None and self.fit is not None:
                warm_from, warm_components, chains, log_weights = self.carried(cons, seed)
        return fit_model(
            self.settings,
            self.model,
            self.X,
            cons,
            seed,
            warm_from,
            n_burnin,
            warm_components,
            chains,
            log_weights,
        )

    def carried(self, constraints: Constraints, seed: int):
        """The installed fit's chains as the start of a fit under ``constraints`` seeded ``seed``: ``(labels (C,
        n), components (C, n) or None, chains (C,) or None, log_weights (C,) or None)``. For a model that samples
        classes under the answers (``propagation="pairs"``) each chain's weight is multiplied by how much likelier
        the answers now make it than those it was sampled under, and the chains are resampled when the weights
        are too uneven (:func:`~jaxclust.active.resample.carry`); ``chains`` says which chain each starts from
        (None: each its own), ``log_weights`` their weights (None: equal). Other models' chains go on as they
        are."""
        fit = self.fit
        chains = log_w = None
        if self.settings.propagation == "pairs" and fit.final is not None and fit.constraints is not None:
            chains, log_w = carry(fit.final, fit.log_weights, fit.constraints, constraints, seed)
        if chains is None:
            return fit.final, fit.final_components, None, log_w
        comps = None if fit.final_components is None else fit.final_components[chains]
        return fit.final[chains], comps, chains, log_w

    def install(self, fit: Fit, count: bool = True) -> None:
        """Make ``fit``'s samples those questions are about; ``count``: it counts toward the seeds."""
        st = self.state
        st.samples, st.components, st.stale = fit.samples, fit.components, False
        self.fit = fit
        if count:
            st.n_fits += 1

    @property
    def labels(self) -> np.ndarray | None:
        """The clustering now (the installed fit's ``labels``), None before the first fit."""
        return None if self.fit is None else self.fit.labels

    # --- questions ----------------------------------------------------------------------------------------
    def view(
        self, exclude, key=None, need_entropy: bool = False, fit: Fit | None = None, constraints=None
    ) -> Round:
        """What a strategy sees: ``fit``'s samples (default: the installed ones) under ``constraints`` (default:
        those in effect), ``exclude`` pairs never to ask, ``key`` for the random strategy."""
        st = self.state
        samples, components = (st.samples, st.components) if fit is None else (fit.samples, fit.components)
        classes = getattr(self.fit if fit is None else fit, "classes", None)
        return Round(
            samples,
            st.constraints if constraints is None else constraints,
            exclude,
            key=key,
            X=self.X,
            components=components,
            block=self.settings.block_size,
            need_entropy=need_entropy,
            split=self.settings.propagation == "classes" or classes is not None,
            classes=classes,
        )

    def rank(
        self, k: int, exclude, key=None, need_entropy: bool = False, fit: Fit | None = None, constraints=None
    ):
        """Up to ``k`` pairs to ask, best first, and the highest link entropy among the unknown pairs when the
        strategy knows it (:func:`~jaxclust.active.selection.pick` over :meth:`view`). The batch method needs
        answers between its picks; ranked in one pass, its pairs are those of highest link entropy."""
        strategy = self.settings.strategy if self.settings.strategy != "batch" else "entropy"
        return pick(strategy, self.view(exclude, key, need_entropy, fit, constraints), k)
