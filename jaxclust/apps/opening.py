"""Opening an annotation session: items, features, store, model and learner, one way for every app.

``jaxclust annotate`` (the terminal), the notebook annotator and ``jaxclust serve`` (the team server) all open
their sessions with :func:`open_session`, so a session started in one resumes exactly in another: the same
features (saved beside the store), the same model and the same learner settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from jaxclust.active.chat import ChatEndpoint, ChatOracle
from jaxclust.active.store import AnswerStore
from jaxclust.apps.features import compute_features, session_features
from jaxclust.apps.items import Items
from jaxclust.errors import InvalidInputError
from jaxclust.validation import Int, Options, check_rule

__all__ = [
    "Opened",
    "open_session",
    "feature_words",
    "default_model",
    "MODELS",
    "SAMPLER_RULES",
    "check_sampler_options",
    "make_learner",
    "open_machine",
    "DEFAULT_STRATEGY",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_STOP_ENTROPY",
]

DEFAULT_STRATEGY = "explore"
DEFAULT_BATCH_SIZE = 1
#: Confidence stop (nats): the session ends when every unknown pair has a link entropy below this, i.e. a
#: co-clustering probability below about 0.05 or above about 0.95 (H(0.05) = 0.199 nats). With 40 samples
#: (the default 4 chains x 10) a pair on which at most 2 samples disagree counts as settled.
DEFAULT_STOP_ENTROPY = 0.2


#: The models an annotation session can be given by name (``--model``).
MODELS = ("dpmm", "nested")


#: The declared rule of each of ``default_model``'s options (the apps' ``sampler_options``).
SAMPLER_RULES = {
    "model": Options(MODELS),
    "n_chains": Int(1),
    "n_burnin": Int(0, none=True),
    "n_samples": Int(1),
}


def check_sampler_options(options: dict[str, Any] | None, name: Callable[[str, str], str]) -> None:
    """Each of ``options`` by its rule (:data:`SAMPLER_RULES`), before anything is created; the message names an
    option as ``name(key, key)`` gives it (the command line's flags, or the parameter names)."""
    for key, value in (options or {}).items():
        if key not in SAMPLER_RULES:
            raise InvalidInputError(
                f"sampler_options: unknown option {key!r} (expected {', '.join(SAMPLER_RULES)})"
            )
        check_rule(SAMPLER_RULES[key], value, name(key, key))


def default_model(
    random_state: int = 0,
    n_chains: int = 4,
    n_burnin: int | None = None,
    n_samples: int = 10,
    model: str = "dpmm",
):
    """The model of an annotation session. ``"dpmm"``: ``DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3)``,
    its samples read as classes of components by the session. ``"nested"``: ``NestedDPMM(n_chains=4,
    n_burnin=100, n_samples=10)``, classes sampled inside the model, so that answers the session did not pick
    (other annotators', a chat model's) compose; its refits take longer. ``n_burnin`` None: 50 and 100."""
    if model == "nested":
        from jaxclust.dpmm.nested_model import NestedDPMM

        burn = 100 if n_burnin is None else n_burnin
        return NestedDPMM(n_chains=n_chains, n_burnin=burn, n_samples=n_samples, random_state=random_state)
    from jaxclust.dpmm import DPMM

    burn = 50 if n_burnin is None else n_burnin
    return DPMM(n_chains=n_chains, n_burnin=burn, n_samples=n_samples, thin=3, random_state=random_state)


def make_learner(
    model: Any,
    oracle: Any,
    store: Any,
    strategy: str = DEFAULT_STRATEGY,
    batch_size: int = DEFAULT_BATCH_SIZE,
    random_state: int = 0,
    stop_entropy: float | None = DEFAULT_STOP_ENTROPY,
    annotator: str | None = None,
    progress: bool = False,
    status: Callable[[str], Any] | None = None,
    propagation: str | None = None,
    error_rate: Any = 0.0,
):
    """The :class:`~jaxclust.active.ActiveLearner` of an annotation session (``min_samples=4``; a
    ``stop_entropy`` of 0 or None never stops early)."""
    from jaxclust.active import ActiveLearner

    return ActiveLearner(
        model,
        oracle,
        strategy=strategy,
        batch_size=batch_size,
        random_state=random_state,
        store=store,
        min_samples=4,
        progress=progress,
        stop_entropy=stop_entropy or None,
        status=status,
        annotator=annotator,
        propagation=propagation,
        error_rate=error_rate,
    )


class Opened(NamedTuple):
    """An open session: ``X`` (n, D) the items' features, ``store`` the open answer store, ``learner`` its
    learner, ``resumed`` the answers already in the store when it was opened, ``own_store`` whether
    :func:`open_session` opened the store (and the caller closes it)."""

    X: np.ndarray
    store: AnswerStore
    learner: Any
    resumed: int
    own_store: bool


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def feature_words(name: str | None) -> str:
    """How a status line names the featuriser a store records (``meta["featurizer"]["featurizer"]``)."""
    return {
        "wordllama": "WordLlama embeddings",
        "tfidf-svd-standardised": "TF-IDF -> SVD",
        "precomputed": "your embeddings",
        "sentence-transformers": "your model",
    }.get(name or "", "your featuriser")


def _name_of(featurizer) -> str | None:
    identity = getattr(featurizer, "identity", None)
    return identity().get("featurizer") if callable(identity) else None


def open_session(
    items: Items,
    store: str | Path | AnswerStore,
    *,
    shared: bool = False,
    model: Any = None,
    random_state: int = 0,
    sampler_options: dict[str, int] | None = None,
    featurizer: Any = None,
    say: Callable[[str], Any] | None = None,
    **learner_options: Any,
) -> Opened:
    """Features, store, model and learner for ``items``.

    ``store``: a path (opened here, ``shared`` or not) or an open :class:`~jaxclust.active.store.AnswerStore`.
    Texts get :func:`~jaxclust.text.text_featurizer`'s default (WordLlama embeddings when installed, else TF-IDF)
    unless ``featurizer`` is given (a transformer, or what ``--features`` takes: ``"wordllama"``, ``"tfidf"``, a
    ``.npy`` or a model folder); a resumed store keeps its own and refuses another. On a new store the
    features are computed before the store is created, so bad items create nothing; on an existing one they are
    the features saved beside it (an answer is about the items as they were when it was given). ``model``
    defaults to :func:`default_model` (``random_state``, ``sampler_options``); ``learner_options`` go to
    :func:`make_learner` (``oracle``, ``strategy``, ``batch_size``, ``stop_entropy``, ``annotator``, ...).
    ``say`` is told when texts are turned into features (seconds on a large corpus).
    """
    if featurizer is not None and items.kind != "texts":
        raise InvalidInputError(
            f"--features: {items.label} holds numbers, which are their own features (texts only)"
        )
    if isinstance(featurizer, str | os.PathLike):  # what --features says
        from jaxclust.text import text_featurizer

        featurizer = text_featurizer(featurizer)
    own_store = not isinstance(store, AnswerStore)
    computed = None
    if own_store and not _has_content(Path(store)):  # a new store: bad items must create nothing
        if items.kind == "texts":
            from jaxclust.text import text_featurizer

            featurizer = text_featurizer(None) if featurizer is None else featurizer
            if say is not None:
                n = len(items)
                say(
                    f"Turning {n} text{'s' if n != 1 else ''} into features ({feature_words(_name_of(featurizer))})..."
                )
        computed = compute_features(items, featurizer)
    answers = AnswerStore(store, shared=shared) if own_store else store
    try:
        X = session_features(items, answers, featurizer, computed)
        if model is None:
            model = default_model(random_state, **(sampler_options or {}))
        oracle = learner_options.pop("oracle", None)
        learner = make_learner(model, oracle, answers, random_state=random_state, **learner_options)
        return Opened(X, answers, learner, len(answers), own_store)
    except BaseException:
        if own_store:
            answers.close()
        raise


#: The ``machine`` settings of the apps, as :class:`~jaxclust.active.chat.ChatEndpoint` names them.
_MACHINE_KEYS = {
    "url": "base_url",
    "model": "model",
    "key_env": "api_key_env",
    "max_requests": "max_requests",
}


def open_machine(
    items: Items,
    machine: dict[str, Any],
    flag: Callable,
    build: Callable[[ChatOracle, Any], Any],
    store: str | os.PathLike | None = None,
):
    """The chat model of an app's ``machine`` settings (``url``, ``model``, ``key_env``, ``check``, ``n_replies``,
    ``max_requests``; texts only) as ``build(oracle, check)`` makes it answer (the terminal's
    :class:`~jaxclust.active.chat.MachineFirst`, the team's :class:`~jaxclust.active.team_machine.TeamMachine`).
    With the answer ``store``'s path, its votes are kept beside it (``<store>.chat.jsonl``, a
    :class:`~jaxclust.active.chat_cache.VoteCache`), so a resumed session asks no pair again. A bad setting is
    named as ``flag(name, default)`` spells its option."""
    where = flag("machine", "machine")
    unknown = set(machine) - {"url", "model", "key_env", "check", "n_replies", "max_requests"}
    if unknown:
        raise InvalidInputError(f"{where}: unknown setting {sorted(unknown)[0]!r}")
    if items.kind != "texts":
        raise InvalidInputError(
            f"{flag('machine_url', 'machine')}: {items.label} holds numbers; a chat model answers about texts"
        )
    for key in ("url", "model"):
        if not machine.get(key):
            raise InvalidInputError(f"{flag('machine_' + key, where + '[' + repr(key) + ']')}: is needed")
    settings = {_MACHINE_KEYS[k]: v for k, v in machine.items() if k in _MACHINE_KEYS}
    settings.setdefault("api_key_env", None)
    try:
        endpoint = ChatEndpoint(**settings)
        cache = None if store is None else Path(store).with_name(Path(store).name + ".chat.jsonl")
        chat = ChatOracle(items.texts, endpoint, n_replies=machine.get("n_replies", 5), cache=cache)
        return build(chat, machine.get("check"))
    except InvalidInputError as exc:  # name the option as the caller spelled it
        text = str(exc)
        for ours, theirs in (*((v, k) for k, v in _MACHINE_KEYS.items()), ("check", "check")):
            if text.startswith((f"{ours}:", f"{ours}[")):
                text = flag("machine_" + theirs, f"{where}[{theirs!r}]") + text[len(ours) :]
                break
        raise InvalidInputError(text) from None
