"""``jaxclust serve``: the web annotator for a team, over a :class:`~jaxclust.active.team.TeamSession`.

A Starlette application with server-rendered pages (no JavaScript framework; one small script adds the keyboard
shortcuts):

* ``/``: sign in by name, then the question: both items (name, text, context; an image where an item names an
  image file), the reason the pair is asked and the model's confidence, the buttons *same cluster* (``y``, ``m`` or
  ``1``), *different* (``n``, ``c`` or ``2``), *don't know* (``d``, ``?`` or ``3``) and *undo* (``u``): the keys
  of :mod:`jaxclust.active.replies`, as in the terminal and the notebook; and the progress.
* ``/clusters``: the current clusters (sizes, a few members each) and a figure of them.
* ``/agreement``: answers per annotator, agreement per two annotators (Cohen's kappa) and overall
  (Krippendorff's alpha) on the doubly answered pairs, the error rate each annotator's disputed answers get,
  and the pairs answered both ways, for review.
* ``/machine`` (with a chat model that answers first): its error rates, its cost, the answers people overruled
  (:mod:`jaxclust.apps.serve_machine`), and the switch to review its answers, most doubtful first.
* ``/export/labels.csv`` (``name,cluster[,text]``), ``/export/answers.jsonl`` (with the annotators; ``?all=1``
  adds the undone answers).
* A JSON API for scripts: ``GET /api/question``, ``POST /api/answer`` (``{"i", "j", "answer"}``; its reply
  holds the next question), ``POST /api/undo``, ``GET /api/status``; the annotator is the ``X-Annotator``
  header (or the sign-in cookie).

Security (:mod:`jaxclust.apps.serve_access`): the server needs a ``token`` unless it listens on a loopback
address (the command line generates one and prints the address with it; the token comes once as ``?token=`` and
is kept in a cookie, or as ``Authorization: Bearer <token>``), and without one it answers only requests addressed
to this machine's own names. Images are read only from regular image files under the data's folder
(:mod:`jaxclust.apps.serve_items`). Every item and name is escaped; pages allow scripts and styles from the
server only (Content-Security-Policy); request bodies are bounded (``max_body`` bytes); a bad request gets a
4xx page or JSON with a message, an unexpected error a 500 without a trace (the trace goes to the server's log).

The pages' style, script, headers and request readers are in :mod:`jaxclust.apps.serve_http`; opening the team
session from the command line's options and serving it, in :mod:`jaxclust.apps.serve_run`.
"""

from __future__ import annotations

import html
import io
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import numpy as np

from jaxclust.active.agreement import error_rates, store_agreement
from jaxclust.active.oracles import item_label, shorten
from jaxclust.active.replies import ANSWERS, KEYS, WORDS
from jaxclust.active.store import check_annotator
from jaxclust.active.team import Question, TeamSession
from jaxclust.apps.annotate import labels_csv
from jaxclust.apps.features import projection_2d
from jaxclust.apps.items import Items
from jaxclust.apps.serve_access import Guard, check_token
from jaxclust.apps.serve_http import HEADERS, SCRIPT, STYLE, error_page, form_of, json_object, pair_of
from jaxclust.apps.serve_items import ItemView
from jaxclust.apps.serve_machine import machine_body, review_switch
from jaxclust.errors import (
    InvalidInputError,
    JaxclustError,
    MissingDependencyError,
    QuestionError,
    StoreError,
)

try:
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise MissingDependencyError(
        'jaxclust serve needs Starlette and Uvicorn: pip install "jaxclust[serve]"', name="starlette"
    ) from exc

__all__ = ["make_app", "MAX_BODY"]

log = logging.getLogger("jaxclust.serve")

#: Largest request body accepted (bytes): an answer is a few dozen.
MAX_BODY = 16 * 1024
COOKIE_NAME = "jaxclust_annotator"


class App:
    """The pages and the API over one team session (see the module docstring)."""

    def __init__(self, team: TeamSession, view: ItemView, title: str):
        self.team, self.view, self.title = team, view, title
        self.messages: dict[str, tuple[str, str]] = {}  # annotator -> (css class, text) shown once
        self.reviewing: set[str] = set()  # annotators reviewing the machine's answers
        self._figure: tuple[int, bytes] | None = None
        self._projection: np.ndarray | None = None

    # --- who is asking ----------------------------------------------------------------------------------------
    def who(self, request: Request, required: bool = True) -> str | None:
        name = request.headers.get("x-annotator")
        if name is None and request.cookies.get(COOKIE_NAME) is not None:
            name = unquote(request.cookies[COOKIE_NAME], errors="strict")  # percent-encoded: any script
        if name is None:
            if required:
                raise HTTPException(
                    401, "no annotator: sign in on the start page, or send an X-Annotator header"
                )
            return None
        try:
            return check_annotator(name)
        except InvalidInputError as exc:
            raise HTTPException(400, str(exc)) from exc

    # --- pages ---------------------------------------------------------------------------------------------------
    def page(self, title: str, body: str, who: str | None = None, refresh: int | None = None) -> HTMLResponse:
        me = (
            f"<span class=who>answering as <b>{html.escape(who)}</b> "
            "<form method=post action=/signout style=display:inline><button>change</button></form></span>"
            if who
            else ""
        )
        meta = f"<meta http-equiv=refresh content={int(refresh)}>" if refresh else ""
        text = (
            "<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)} - jaxclust</title><link rel=stylesheet href=/static/style.css>{meta}"
            f"</head><body><nav><b>jaxclust</b> <span>{html.escape(self.title)}</span> <a href=/>Annotate</a>"
            "<a href=/clusters>Clusters</a><a href=/agreement>Agreement</a>"
            + ("<a href=/machine>Machine</a>" if self.team.machine is not None else "")
            + f"<a href=/export/labels.csv>labels.csv</a><a href=/export/answers.jsonl>answers.jsonl</a>{me}</nav>"
            f"<main>{body}</main><script src=/static/keys.js></script></body></html>"
        )
        return HTMLResponse(text, headers=HEADERS)

    def progress(self, who: str) -> str:
        s = self.team.status()
        target = f" of {s['n_queries']}" if s["n_queries"] is not None else ""
        mine = s["per_annotator"].get(who, 0)
        if s["n_fits"] == 0:
            model = "the model is starting (its first fit also compiles)"
        else:
            behind = s["fitting_behind"]
            model = f"model fit {s['n_fits']} ({s['fit_seconds']:.1f} s), {s['n_clusters']} clusters" + (
                f", {behind} answers not yet in it" if behind else ", up to date"
            )
        err = (
            f" <span class=err>last fit failed: {html.escape(s['fit_error'])}</span>"
            if s["fit_error"]
            else ""
        )
        return (
            f"<p class=progress><b>{s['n_answers']}</b> answers{target} in effect; {mine} yours; "
            f"{s['n_second_owed']} second opinions owed; {html.escape(model)}.{err}</p>"
        )

    async def home(self, request: Request):
        who = self.who(request, required=False)
        if who is None:
            body = (
                "<h2>Who is answering?</h2><p>Your name is stored with every answer (agreement between "
                "annotators is measured on the pairs two of you answer).</p>"
                "<form method=post action=/signin><input name=annotator autofocus required maxlength=100>"
                " <button>Start</button></form>"
            )
            return self.page("sign in", body)
        reviewing = who in self.reviewing
        q = await run_in_threadpool(self.team.review if reviewing else self.team.question, who)
        flash = self.messages.pop(who, None)
        parts = [f"<div class={flash[0]}>{html.escape(flash[1])}</div>" if flash else "", self.progress(who)]
        last = self.team.last_answer(who)
        pair = (
            ""
            if last is None
            else f"<input type=hidden name=undo_i value={last['i']}><input type=hidden name=undo_j value={last['j']}>"
        )
        undo = (
            f"<form method=post action=/undo>{pair}<button class=undo data-key=undo>Undo my last answer "
            f"<kbd>{KEYS['undo'][0]}</kbd></button></form>"
        )
        if q is None and reviewing:
            parts += ["<h2>No answer of the chat model left to review</h2>", review_switch(True), undo]
            return self.page("review", "".join(parts), who)
        if q is None:
            done = self.team.done
            parts.append(
                "<h2>Nothing left to ask</h2><p>The session's target is reached, or the model is confident about "
                "every remaining pair. Undo still works.</p>"
                if done
                else f"<h2>No question free right now</h2><p>{html.escape(self.team.waiting())}; this page looks "
                "again every few seconds.</p>"
            )
            parts.append(undo)
            return self.page("annotate", "".join(parts), who, refresh=None if done else 3)
        if reviewing:
            parts.append("<p class=msg>Reviewing the chat model's answers, most doubtful first.</p>")
        parts.append(self.question_html(q))
        parts.append(undo + (review_switch(True) if reviewing else ""))
        parts.append(self.overview())
        return self.page("annotate", "".join(parts), who)

    def question_html(self, q: Question) -> str:
        conf = (
            ""
            if q.p_same is None
            else f"<p class=conf>The model puts them in one cluster in {q.p_same:.0%} of its samples.</p>"
        )
        buttons = "".join(
            f"<button class={a} name=answer value={a} data-key={a}>{label} <kbd>{key}</kbd></button>"
            for a, label, key in (
                ("must", "Same cluster", KEYS["must"][0]),
                ("cannot", "Different", KEYS["cannot"][0]),
                ("unknown", "Don't know", KEYS["unknown"][0]),
            )
        )
        return (
            "<h2>Do these two belong in the same cluster?</h2>"
            f"<div class=pair><div class=card id=item-a>{self.view.html(q.i)}</div>"
            f"<div class=card id=item-b>{self.view.html(q.j)}</div></div>"
            f"<p class=why>Asked because {html.escape(q.reason)}.</p>{conf}"
            f"<form method=post action=/answer><input type=hidden name=i value={q.i}>"
            f"<input type=hidden name=j value={q.j}><div class=buttons>{buttons}</div></form>"
        )

    async def signin(self, request: Request):
        form = await form_of(request)
        name = str(form.get("annotator", "")).strip()
        try:
            check_annotator(name or None)
        except InvalidInputError as exc:
            raise HTTPException(400, str(exc)) from exc
        if not name:
            raise HTTPException(400, "annotator: give your name")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE_NAME, quote(name, safe=""), httponly=True, samesite="strict", max_age=30 * 24 * 3600
        )
        return response

    async def signout(self, request: Request):
        who = self.who(request, required=False)
        if who is not None:
            await run_in_threadpool(self.team.skip, who)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE_NAME)
        return response

    def answer_of(self, fields: Any, form: bool = True) -> tuple[int, int, str]:
        i, j = pair_of(fields, "i", "j", "the pair asked", form)
        answer = fields.get("answer")
        if answer not in ANSWERS:
            raise HTTPException(400, f"answer: expected one of {', '.join(ANSWERS)}, got {answer!r}")
        return i, j, str(answer)

    async def answer(self, request: Request):
        who = self.who(request)
        i, j, answer = self.answer_of(await form_of(request))
        try:
            await run_in_threadpool(self.team.answer, who, i, j, answer)
        except QuestionError as exc:
            if not exc.already:  # a form sent twice is no error
                self.messages[who] = ("err", str(exc))
        else:
            conflicts = self.team.state.conflicts
            if (
                conflicts
                and conflicts[-1]["answer"]["i"] == min(i, j)
                and conflicts[-1]["answer"]["j"] == max(i, j)
            ):
                self.messages[who] = ("msg", conflicts[-1]["message"])
        return RedirectResponse("/", status_code=303)

    async def undo(self, request: Request):
        who = self.who(request)
        form = await form_of(request) if await request.body() else {}
        # the page names the answer it offers to undo: sent twice, it undoes one (a bare post: the latest)
        pair = pair_of(form, "undo_i", "undo_j", "the answer to undo") if "undo_i" in form else None
        undone = await run_in_threadpool(self.team.undo, who, pair)
        if undone is None and pair is None:
            self.messages[who] = ("msg", "Nothing to undo: you have no answer in effect.")
        elif undone is None:  # sent twice, or undone meanwhile: undo is idempotent, as answering is
            self.messages[who] = (
                "msg",
                f"The answer about {pair[0]}-{pair[1]} is no longer in effect: nothing undone.",
            )
        else:
            self.messages[who] = (
                "msg",
                f"Undone: {undone['i']}-{undone['j']} ({WORDS[undone['answer']]}); the undo is kept in the "
                "store's history. Here is the pair again.",
            )
        return RedirectResponse("/", status_code=303)

    async def clusters(self, request: Request):
        who = self.who(request, required=False)
        labels = self.team.labels_
        if labels is None:
            return self.page("clusters", "<p>The model's first fit is not done yet.</p>", who, refresh=3)
        n_clusters = len(np.unique(labels))
        s = self.team.status()
        body = (
            f"<h2>{n_clusters} clusters</h2><p class=progress>From model fit {s['n_fits']}, with "
            f"{s['n_answers'] - (s['fitting_behind'] or 0)} answers.</p><img src=/clusters.png alt='the clusters'>"
            + self.cluster_table(labels)
        )
        return self.page("clusters", body, who)

    def cluster_table(self, labels: np.ndarray, top: int | None = None, per: int = 5) -> str:
        """The clusters, largest first (the ``top`` largest), each with its size and first ``per`` members."""
        names, sizes = np.unique(labels, return_counts=True)
        items = self.view.items
        rows = []
        for rank, c in enumerate(names[np.argsort(-sizes, kind="stable")][:top]):
            members = np.flatnonzero(labels == c)
            shown = "<br>".join(
                html.escape(item_label(items.names, int(k), 80))
                + (
                    f" <span class=context>{html.escape(shorten(items.shown[k], 80))}</span>"
                    if items.shown is not None
                    else ""
                )
                for k in members[:per]
            )
            more = f"<br>... and {len(members) - per} more" if len(members) > per else ""
            rows.append(f"<tr><td>{rank}</td><td>{len(members)}</td><td>{shown}{more}</td></tr>")
        return (
            "<table><tr><th>cluster</th><th>items</th><th>first members</th></tr>"
            + "".join(rows)
            + "</table>"
        )

    def overview(self) -> str:
        """The current clusters under the question: the largest few and the figure."""
        labels = self.team.labels_
        if labels is None:
            return ""
        k = len(np.unique(labels))
        more = f" (the 5 largest; <a href=/clusters>all {k}</a>)" if k > 5 else ""
        return (
            f"<h3>The clusters now{more}</h3><div class=pair><div>{self.cluster_table(labels, 5, 3)}</div>"
            "<div><img class=small src=/clusters.png alt='the clusters'></div></div>"
        )

    async def figure(self, request: Request):
        labels, n_fits = self.team.labels_, self.team.n_fits
        if labels is None:
            raise HTTPException(404, "no clustering yet: the model's first fit is not done")
        if self._figure is None or self._figure[0] != n_fits:
            self._figure = (n_fits, await run_in_threadpool(self.draw, labels, n_fits))
        return Response(self._figure[1], media_type="image/png", headers=HEADERS)

    def draw(self, labels: np.ndarray, n_fits: int) -> bytes:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        if self._projection is None:
            self._projection = projection_2d(self.team.X)
        P = self._projection
        fig = Figure(figsize=(6, 4.2), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        codes = np.unique(labels, return_inverse=True)[1]
        ax.scatter(P[:, 0], P[:, 1], c=codes % 20, cmap="tab20", vmin=0, vmax=19, s=18)
        ax.set_title(f"{codes.max() + 1} clusters (fit {n_fits})")
        ax.set_xlabel("PCA 1")
        ax.set_ylabel("PCA 2")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        return buf.getvalue()

    async def agreement(self, request: Request):
        who = self.who(request, required=False)
        records = await run_in_threadpool(self.records)
        a = store_agreement(records)
        rates = error_rates(records)

        def num(x: float) -> str:
            return "undefined" if np.isnan(x) else f"{x:.3f}"

        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>{c['must']}</td><td>{c['cannot']}</td><td>{c['unknown']}</td>"
            f"<td>{rates.get(name, float('nan')):.3f}</td></tr>"
            for name, c in sorted(a["annotators"].items())
        )
        pairs = "".join(
            f"<tr><td>{html.escape(p['annotators'][0])} / {html.escape(p['annotators'][1])}</td><td>{p['n']}</td>"
            f"<td>{p['agreement']:.0%}</td><td>{num(p['kappa'])}</td></tr>"
            for p in a["pairs"]
        )
        names = self.view.items.names
        review = "".join(
            f"<tr><td>{html.escape(item_label(names, d['i'], 80))}</td><td>{html.escape(item_label(names, d['j'], 80))}"
            "</td><td>"
            + ", ".join(f"{html.escape(w)}: {WORDS[x]}" for w, x in sorted(d["answers"].items()))
            + "</td></tr>"
            for d in a["disagreements"]
        )
        body = (
            "<h2>Annotators</h2><table><tr><th>annotator</th><th>same</th><th>different</th><th>don't know</th>"
            f"<th>error rate of a disputed answer</th></tr>{rows}</table>"
            f"<h2>Agreement</h2><p>{a['doubly_answered']} pairs answered by two or more annotators; "
            f"Krippendorff's alpha <b id=alpha>{num(a['alpha'])}</b>.</p>"
            f"<table><tr><th>annotators</th><th>pairs</th><th>alike</th><th>Cohen's kappa</th></tr>{pairs}</table>"
            f"<h2>Answered both ways ({len(a['disagreements'])})</h2><p>Each of these answers counts as evidence "
            "wrong with its annotator's error rate.</p>"
            f"<table><tr><th>item</th><th>item</th><th>answers</th></tr>{review}</table>"
        )
        return self.page("agreement", body, who)

    async def machine(self, request: Request):
        who = self.who(request, required=False)
        if self.team.machine is None:
            raise HTTPException(
                404, "no chat model answers in this session (see jaxclust serve --machine-url)"
            )
        status = await run_in_threadpool(self.team.status)
        overruled = self.team.machine.overruled(await run_in_threadpool(self.records))
        body = machine_body(status["machine"], overruled, self.view.items.names, who in self.reviewing)
        return self.page("machine", body, who)

    async def review(self, request: Request):
        who = self.who(request)
        form = await form_of(request)
        if self.team.machine is None:
            raise HTTPException(404, "no chat model answers in this session: nothing to review")
        await run_in_threadpool(self.team.skip, who)  # the question held is not answered in the other mode
        if form.get("on") == "1":
            self.reviewing.add(who)
        else:
            self.reviewing.discard(who)
        return RedirectResponse("/", status_code=303)

    async def labels_file(self, request: Request):
        labels = self.team.labels_
        if labels is None:
            raise HTTPException(404, "no clustering yet: the model's first fit is not done")
        text = labels_csv(self.view.items.names, labels, self.view.items.texts)
        return Response(
            text,
            media_type="text/csv; charset=utf-8",
            headers={**HEADERS, "Content-Disposition": "attachment; filename=labels.csv"},
        )

    async def answers_file(self, request: Request):
        every = request.query_params.get("all") in ("1", "true", "yes")
        rows = await run_in_threadpool(self.export, every)
        text = "".join(json.dumps(r) + "\n" for r in rows)
        return Response(
            text,
            media_type="application/x-ndjson; charset=utf-8",
            headers={**HEADERS, "Content-Disposition": "attachment; filename=answers.jsonl"},
        )

    async def image(self, request: Request):
        k = request.path_params["k"]
        got = await run_in_threadpool(self.view.image_bytes, k)
        if got is None:
            raise HTTPException(404, f"item {k} has no image")
        return Response(got[0], media_type=got[1], headers=HEADERS)

    def records(self) -> list[dict[str, Any]]:
        with self.team.lock:
            return self.team.store.records

    def export(self, every: bool) -> list[dict[str, Any]]:
        with self.team.lock:
            return self.team.store.export_rows(every)

    # --- the JSON API --------------------------------------------------------------------------------------------
    def question_json(self, q: Question | None) -> dict[str, Any] | None:
        if q is None:
            return None
        return {
            "i": q.i,
            "j": q.j,
            "kind": q.kind,
            "reason": q.reason,
            "p_same": q.p_same,
            "items": [self.view.plain(q.i), self.view.plain(q.j)],
        }

    async def api_question(self, request: Request):
        who = self.who(request)
        review = request.query_params.get("review") in ("1", "true", "yes")  # the machine's answers
        q = await run_in_threadpool(self.team.review if review else self.team.question, who)
        reply: dict[str, Any] = {"question": self.question_json(q), "done": self.team.done}
        if q is None and not reply["done"]:
            reply["waiting"] = self.team.waiting()
        return JSONResponse(reply)

    async def api_answer(self, request: Request):
        who = self.who(request)
        i, j, answer = self.answer_of(await json_object(request, '{"i", "j", "answer"}'), form=False)
        stored = await run_in_threadpool(self.team.answer, who, i, j, answer)
        q = await run_in_threadpool(self.team.question, who)
        return JSONResponse({"stored": stored, "next": self.question_json(q)})

    async def api_undo(self, request: Request):
        who = self.who(request)
        pair = None
        if await request.body():  # {"i", "j"}: undo that answer only if it is still the latest in effect
            pair = pair_of(
                await json_object(request, '{"i", "j"}'), "i", "j", "the answer to undo", form=False
            )
        undone = await run_in_threadpool(self.team.undo, who, pair)
        if undone is None and pair is not None:
            return JSONResponse(
                {
                    "undone": None,
                    "message": f"already undone: {pair[0]}-{pair[1]} is not {who}'s latest answer",
                }
            )
        return JSONResponse({"undone": undone})

    async def api_status(self, request: Request):
        return JSONResponse(await run_in_threadpool(self.team.status))


def make_app(
    team: TeamSession,
    items: Items,
    *,
    token: str | None = None,
    max_body: int = MAX_BODY,
    title: str | None = None,
    hosts: frozenset[str] | None = None,
    image_root: str | Path | None = None,
) -> Starlette:
    """The web annotator (an ASGI application) over ``team``, showing ``items``.

    ``token``: required of every request when given (see the module docstring; :func:`check_token`);
    ``max_body``: largest request body in bytes; ``title``: shown in the page header (default: the store's file
    name); ``hosts``: the names requests may address (the Host header,
    :func:`~jaxclust.apps.serve_access.allowed_hosts`), None for any; ``image_root``: the folder images are
    served from (:class:`ItemView`). The caller starts and closes ``team``.
    """
    if len(items) != team.n:
        raise InvalidInputError(f"items: {len(items)} items, the team session has {team.n}")
    if token is not None:
        check_token(token)
    app = App(team, ItemView(items, root=image_root), title or team.store.path.name)

    async def http_error(request: Request, exc: HTTPException):
        return error_page(exc.status_code, str(exc.detail), request)

    async def jaxclust_error(request: Request, exc: JaxclustError):
        if isinstance(exc, QuestionError):
            return error_page(409, str(exc), request)
        if isinstance(exc, StoreError):
            log.error("answer store: %s", exc)
            return error_page(503, f"{exc} (the answer was not saved)", request)
        return error_page(400, str(exc), request)

    async def unexpected(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_page(500, "internal error: the server's log has the details", request)

    async def static_style(request: Request):
        return Response(STYLE, media_type="text/css", headers=HEADERS)

    async def static_keys(request: Request):
        return Response(SCRIPT, media_type="text/javascript", headers=HEADERS)

    routes = [
        Route("/", app.home),
        Route("/signin", app.signin, methods=["POST"]),
        Route("/signout", app.signout, methods=["POST"]),
        Route("/answer", app.answer, methods=["POST"]),
        Route("/undo", app.undo, methods=["POST"]),
        Route("/clusters", app.clusters),
        Route("/clusters.png", app.figure),
        Route("/agreement", app.agreement),
        Route("/machine", app.machine),
        Route("/review", app.review, methods=["POST"]),
        Route("/export/labels.csv", app.labels_file),
        Route("/export/answers.jsonl", app.answers_file),
        Route("/item/{k:int}/image", app.image),
        Route("/api/question", app.api_question),
        Route("/api/answer", app.api_answer, methods=["POST"]),
        Route("/api/undo", app.api_undo, methods=["POST"]),
        Route("/api/status", app.api_status),
        Route("/static/style.css", static_style),
        Route("/static/keys.js", static_keys),
    ]
    web = Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_error, JaxclustError: jaxclust_error, Exception: unexpected},
    )
    web.add_middleware(Guard, token=token, max_body=int(max_body), hosts=hosts)
    web.state.annotator = app
    return web
