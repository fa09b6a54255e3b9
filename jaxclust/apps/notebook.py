"""The notebook annotator: an active-clustering session in Jupyter or Colab, with buttons.

>>> from jaxclust.apps.notebook import NotebookAnnotator                  # doctest: +SKIP
>>> ann = NotebookAnnotator("texts.txt", store="answers.sqlite")          # doctest: +SKIP
>>> ann                                    # the widget: the pair, the buttons, progress, the live figure

It shows the two items of each question (their names and texts, or their feature values), the buttons *same
cluster* (must-link), *different* (cannot-link), *don't know* and *undo*, the progress, and a live figure of the
current clustering: a 2-D projection (PCA of the features) coloured by cluster, with the pair asked and the
answers given, plus the V-beta curve when gold labels are given.

The session is the one ``jaxclust annotate`` runs (the same reader, features, model, learner and answer store;
see :mod:`jaxclust.apps.annotate`): every answer is durable in the store before the next question, and a session
started here resumes exactly from the command line (``jaxclust annotate texts.txt --store answers.sqlite``)
and back, with the same options. Close the annotator (:meth:`NotebookAnnotator.close`) before the command line
opens its store, or use a shared store (``shared=True`` here, ``--shared`` there) to work side by side.

*Undo* appends an undo record to the store (nothing is deleted) and asks again from where the session was before
that answer: a resumed session (here or on the command line) asks exactly what a session that never got the
undone answer would ask.

Everything the buttons do is a method, so code can drive it: ``ann.answer("must")``, ``ann.answer("cannot")``,
``ann.answer("unknown")``, ``ann.undo()``; ``ann.question`` is the pair asked (None when the session is over).

Needs ipywidgets (``pip install "jaxclust[notebooks]"``); it is imported when an annotator is made, never by
the library.
"""

from __future__ import annotations

import html
import io
from pathlib import Path
from typing import Any

import numpy as np

from jaxclust.active.oracles import item_label, shorten
from jaxclust.active.replies import REPLIES
from jaxclust.active.store import check_annotator, default_annotator
from jaxclust.apps import items as items_mod
from jaxclust.apps.cache import use_compilation_cache
from jaxclust.apps.features import projection_2d
from jaxclust.apps.opening import DEFAULT_BATCH_SIZE, DEFAULT_STOP_ENTROPY, DEFAULT_STRATEGY, open_session
from jaxclust.errors import InvalidInputError, MissingDependencyError

__all__ = ["NotebookAnnotator", "REPLIES"]


def _widgets():
    try:
        import ipywidgets
    except ImportError as exc:
        raise MissingDependencyError(
            'the notebook annotator needs ipywidgets: pip install "jaxclust[notebooks]" (or pip install '
            "ipywidgets), then restart the kernel",
            name="ipywidgets",
        ) from exc
    return ipywidgets


class NotebookAnnotator:
    """An active-clustering session with buttons (see the module docstring).

    Parameters
    ----------
    data : path, optional
        The items, as ``jaxclust annotate`` reads them: a ``.txt`` file (one text per line), a CSV (numbers, or
        texts with ``text_column``), JSON lines, a ``.npy`` array. Or give ``texts`` or ``X`` instead.
    store : path or AnswerStore
        The durable answer store (``.sqlite`` or ``.jsonl``), the same file the command line uses.
    texts : list of str, optional
        The items as texts (featurised by TF-IDF -> SVD -> standardised and saved with the store).
    X : array, shape (n, d), optional
        The items as features (e.g. your own embeddings); ``texts`` (optional) are then only shown.
    names : list of str, optional
        Item names (with ``texts`` or ``X``).
    n_queries : int
        Total questions, stored answers included.
    model : estimator, optional
        Default: the command line's, ``DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3)``.
    annotator : str, optional
        Who answers (default: the operating-system user name).
    shared : bool
        Several annotators on one SQLite store at once.
    strategy, batch_size, stop_entropy, random_state :
        As ``jaxclust annotate`` (defaults: ``"explore"``, 1, 0.2 nats, 0).
    gold : array of int, optional
        Gold labels: the figure then shows the V-beta curve (they are never shown to the selection).
    text_column, name_column, context_column : str, optional
        As ``jaxclust annotate`` (CSV columns, JSON-lines fields).
    featurizer : transformer, optional
        Replaces :class:`jaxclust.text.TextFeaturizer` for texts (when the store is created).
    max_chars : int or None
        Texts are cut at a word boundary to this many characters (default 300).
    compilation_cache : bool
        Keep JAX's compiled programs on disk (default True, as ``jaxclust annotate``: see
        :mod:`jaxclust.apps.cache`), so that the next session starts faster.

    Attributes
    ----------
    question : (int, int) or None
        The pair asked now; None once the session is over.
    learner : ActiveLearner
        The learner; ``learner.history_``, ``learner.model_`` and ``learner.conflicts_`` follow the session.
    X : ndarray
        The features the model sees.
    message : str
        The last status line.
    curve_ : list of (int, float)
        With ``gold``: V-beta of the model after each round, against the number of answers (across undos and
        restarts; an undo removes the points that counted the undone answer).
    """

    def __init__(
        self,
        data: str | Path | None = None,
        *,
        store,
        texts=None,
        X=None,
        names=None,
        n_queries: int = 50,
        model: Any = None,
        annotator: str | None = None,
        shared: bool = False,
        strategy: str | None = None,
        batch_size: int | None = None,
        stop_entropy: float | None = None,
        random_state: int = 0,
        gold=None,
        text_column: str | None = None,
        name_column: str | None = None,
        context_column: str | None = None,
        featurizer: Any = None,
        max_chars: int | None = 300,
        compilation_cache: bool = True,
    ):

        self._w = _widgets()
        use_compilation_cache(compilation_cache)
        given = [k for k, v in (("data", data), ("texts", texts), ("X", X)) if v is not None]
        if len(given) != 1:
            raise InvalidInputError(
                f"NotebookAnnotator: give the items once, as data (a file), texts or X; got {given or 'none'}"
            )
        if data is not None:
            self.items = items_mod.read_items(data, text_column, name_column, context_column)
        elif texts is not None and X is None:
            self.items = items_mod.items_from_texts(texts, names)
        else:
            self.items = items_mod.items_from_array(X, names, texts)
        self.annotator = check_annotator(annotator) or default_annotator()
        self.n_queries = n_queries
        self.max_chars = max_chars
        self.gold = None if gold is None else np.asarray(gold)
        self.question: tuple[int, int] | None = None
        self.message = ""
        self._curve: dict[int, float] = {}
        self.finished = False
        opened = open_session(
            self.items,
            store,
            shared=shared,
            model=model,
            random_state=random_state,
            featurizer=featurizer,
            strategy=DEFAULT_STRATEGY if strategy is None else strategy,
            batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
            stop_entropy=DEFAULT_STOP_ENTROPY if stop_entropy is None else stop_entropy,
            annotator=self.annotator,
            status=self._status,
        )
        self.X, self.store, self.learner, self._own_store = (
            opened.X,
            opened.store,
            opened.learner,
            opened.own_store,
        )
        try:
            self._projection = projection_2d(self.X)
            self._build()
            self._start()
        except BaseException:
            self.close()
            raise

    # --- the session ------------------------------------------------------------------------------------
    def _status(self, text: str) -> None:
        self.message = text
        if hasattr(self, "_status_label"):
            self._status_label.value = html.escape(text)

    def _start(self) -> None:
        """(Re)start the learner's session on the store: a resumed session continues exactly."""
        self.finished = False
        self._session = self.learner.iter_questions(self.X, self.n_queries, eval_labels=self.gold)
        self._advance(lambda: next(self._session))

    def _advance(self, step) -> None:
        try:
            self.question = step()
        except StopIteration:
            self.question = None
            self.finished = True
            self._status(self._end_message())
        except BaseException:  # the session cannot go on (e.g. a full disk); what was stored stays stored
            self.question = None
            self.finished = True
            self._refresh()
            raise
        for h in getattr(self.learner, "history_", []):
            # a resumed session's round 0 scores the fit it resumed from, made before the answers it replays
            if "v_beta" in h and (h["round"] > 0 or not h["queries"]):
                self._curve[h["n_queries"]] = h["v_beta"]
        self._refresh()

    @property
    def curve_(self) -> list[tuple[int, float]]:
        return sorted(self._curve.items())

    def _end_message(self) -> str:
        reason = getattr(self.learner, "stop_reason_", "done")
        n = len(self.store)
        text = {
            "done": f"Done: the target of {self.n_queries} questions is reached ({n} answers stored).",
            "confident": f"The model is confident about every remaining pair: it stops here ({n} answers stored).",
            "exhausted": f"Nothing left to ask ({n} answers stored).",
        }.get(reason, f"Session over ({n} answers stored).")
        return text + " Undo still works; a larger n_queries asks more."

    @property
    def n_answers(self) -> int:
        """Answers in effect in the store (all annotators')."""
        return len(self.store)

    @property
    def labels_(self) -> np.ndarray:
        """The current clustering (the learner's ``labels_``: the retained sample closest to the others)."""
        return np.asarray(self.learner.labels_)

    def answer(self, reply: Any) -> tuple[int, int] | None:
        """Answer the pair on screen: ``"must"`` (same cluster), ``"cannot"`` (different clusters) or
        ``"unknown"`` (don't know); also ``"same"``/``"different"``/``"dont_know"``, True/False/None. The answer
        is stored before the next question is chosen. Returns the next question (None when the session is over).
        """
        if self.question is None:
            raise InvalidInputError(
                "answer: the session is over, there is no question to answer (undo reopens it)"
            )
        key = reply.strip().lower() if isinstance(reply, str) else reply
        if isinstance(key, str):
            if key not in REPLIES:
                raise InvalidInputError(
                    f"reply: expected one of {', '.join(sorted(set(REPLIES)))} (or True/False/None), got {reply!r}"
                )
            key = REPLIES[key]
        elif key is True:
            key = "must"
        elif key is False:
            key = "cannot"
        elif key is None:
            key = "unknown"
        else:
            raise InvalidInputError(f"reply: expected a string, True, False or None, got {reply!r}")
        before = len(self.learner.conflicts_)
        self._advance(lambda: self._session.send(key))
        if len(self.learner.conflicts_) > before:
            self._status(self.learner.conflicts_[-1]["message"])
        return self.question

    def undo(self) -> dict | None:
        """Undo this annotator's last answer still in effect (an undo record in the store; nothing is deleted)
        and ask again from there. Returns the undone answer (None when there was nothing to undo)."""
        self._session.close()
        undone = self.store.undo(self.annotator)
        n = len(self.store)
        self._curve = {k: v for k, v in self._curve.items() if k <= n}
        self._start()
        if undone is None:
            self._status(f"Nothing to undo: {self.annotator} has no answer in the store.")
        else:
            kind = {"must": "same cluster", "cannot": "different clusters", "unknown": "don't know"}[
                undone["answer"]
            ]
            self._status(f"Undone: {undone['i']}-{undone['j']} ({kind}). The undo is saved in the store.")
        return undone

    def close(self) -> None:
        """End the session and release the store (every answer is already saved); idempotent."""
        session = getattr(self, "_session", None)
        if session is not None:
            session.close()
            self._session = None
        if getattr(self, "_own_store", False) and getattr(self, "store", None) is not None:
            self.store.close()
        self.question = None
        self.finished = True
        if hasattr(self, "_buttons"):
            for b in self._buttons.values():
                b.disabled = True
            self._status_label.value = "Closed: every answer is saved in the store."

    def __enter__(self) -> NotebookAnnotator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # --- what it shows ----------------------------------------------------------------------------------
    def describe(self, i: int) -> str:
        """How item ``i`` is shown: its name, then its text (or context, or feature values)."""

        name = item_label(self.items.names, i, self.max_chars)
        shown = self.items.shown
        if shown is not None:
            return f"{name}: {shorten(shown[i], self.max_chars)}"
        values = self.items.X[i] if self.items.X is not None else self.X[i]
        cols = self.items.columns or [f"x{c}" for c in range(len(values))]
        text = ", ".join(f"{c}={v:.3g}" for c, v in zip(cols[:8], values[:8], strict=False))
        more = f", ... ({len(values)} values)" if len(values) > 8 else ""
        return f"{name}: {text}{more}"

    def figure(self):
        """The current clustering as a matplotlib Figure (no pyplot): the PCA projection of the features
        coloured by cluster, the pair asked (black rings), the must-link (green) and cannot-link (red dotted)
        answers; and the V-beta curve when gold labels were given."""
        from matplotlib.figure import Figure

        curve = self.gold is not None and bool(self._curve)
        fig = Figure(figsize=(9.5 if curve else 5.5, 4.2), layout="constrained")
        ax = fig.add_subplot(1, 2 if curve else 1, 1)
        P = self._projection
        labels = np.unique(self.labels_, return_inverse=True)[1]
        for rec in getattr(self.learner, "answers_", []):
            if rec["answer"] == "unknown" or not rec["kept"]:
                continue
            a, b = rec["i"], rec["j"]
            style = (
                {"color": "tab:green", "lw": 1.2}
                if rec["answer"] == "must"
                else {"color": "tab:red", "ls": ":"}
            )
            ax.plot(P[[a, b], 0], P[[a, b], 1], alpha=0.6, zorder=1, **style)
        ax.scatter(P[:, 0], P[:, 1], c=labels % 20, cmap="tab20", vmin=0, vmax=19, s=28, zorder=2)
        if self.question is not None:
            q = list(self.question)
            ax.scatter(P[q, 0], P[q, 1], s=160, facecolors="none", edgecolors="black", lw=1.8, zorder=3)
        ax.set_title(f"{len(np.unique(labels))} clusters, {self.n_answers} answers")
        ax.set_xlabel("PCA 1")
        ax.set_ylabel("PCA 2")
        if curve:
            ax2 = fig.add_subplot(1, 2, 2)
            ax2.plot(*zip(*self.curve_, strict=True), marker="o")
            ax2.set_xlabel("answers")
            ax2.set_ylabel("V-beta (gold labels)")
            ax2.set_ylim(0, 1.02)
            ax2.set_title("quality of the clustering")
        return fig

    def _png(self) -> bytes:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig = self.figure()
        FigureCanvasAgg(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        return buf.getvalue()

    def _build(self) -> None:
        w = self._w
        self._progress = w.IntProgress(min=0, max=max(1, int(self.n_queries)), description="answers")
        self._heading = w.HTML()
        self._items_box = [w.HTML(layout=w.Layout(width="48%")) for _ in range(2)]
        self._buttons = {
            "must": w.Button(description="Same cluster", button_style="success", tooltip="must-link"),
            "cannot": w.Button(description="Different", button_style="danger", tooltip="cannot-link"),
            "unknown": w.Button(description="Don't know", tooltip="skip this pair; it is not asked again"),
            "undo": w.Button(description="Undo", button_style="warning", tooltip="undo your last answer"),
        }
        for key, button in self._buttons.items():
            button.on_click(lambda _b, key=key: self._clicked(key))
        self._status_label = w.HTML(html.escape(self.message))
        self._image = w.Image(format="png")
        self._live = False  # the figure is drawn once the widget is on screen
        self._box = w.VBox(
            [
                w.HBox([self._heading, self._progress]),
                w.HBox(self._items_box),
                w.HBox(list(self._buttons.values())),
                self._status_label,
                self._image,
            ]
        )

    @property
    def widget(self):
        """The ipywidgets box (displaying the annotator displays it); from then on the figure follows each
        answer."""
        if not self._live:
            self._live = True
            self._image.value = self._png()
        return self._box

    def _clicked(self, key: str) -> None:
        try:
            if key == "undo":
                self.undo()
            else:
                self.answer(key)
        except Exception as exc:  # noqa: BLE001 - a click has no caller: show the error instead of losing it
            self._status(f"error: {exc}")

    def _refresh(self) -> None:
        if not hasattr(self, "_box"):
            return
        n = self.n_answers
        self._progress.value = min(n, self._progress.max)
        if self.question is None:
            self._heading.value = f"<b>{html.escape(self.store.path.name)}</b>: {n} answers"
            for box in self._items_box:
                box.value = ""
        else:
            self._heading.value = (
                f"<b>Question {n + 1}</b> of {self.n_queries}: do these two belong in the same cluster? "
                f"(answering as {html.escape(self.annotator)})"
            )
            for box, i in zip(self._items_box, self.question, strict=True):
                box.value = (
                    f"<div style='padding:4px;border:1px solid #ccc'>{html.escape(self.describe(i))}</div>"
                )
        for key in ("must", "cannot", "unknown"):
            self._buttons[key].disabled = self.question is None
        if self._live:
            self._image.value = self._png()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        where = "over" if self.question is None else f"asking {self.question}"
        return f"NotebookAnnotator({str(self.store.path)!r}, {self.n_answers} answers, {where})"
