"""The web annotator's page about a chat model that answers first (``/machine``): what it costs, how often it is
wrong, which of its answers people overruled, and the switch to review its answers in order of doubt.

Pure rendering: :func:`machine_body` turns the team session's numbers into HTML (every name and item escaped);
:mod:`jaxclust.apps.serve` serves it.
"""

from __future__ import annotations

import html
from typing import Any

from jaxclust.active.oracles import item_label
from jaxclust.active.replies import WORDS

__all__ = ["machine_body", "review_switch"]


def review_switch(reviewing: bool) -> str:
    """The form that starts (or stops) reviewing the machine's answers."""
    if reviewing:
        return (
            "<form method=post action=/review><input type=hidden name=on value=0>"
            "<button>Stop reviewing: back to the model's questions</button></form>"
        )
    return (
        "<form method=post action=/review><input type=hidden name=on value=1>"
        "<button>Review the chat model's answers, most doubtful first</button></form>"
    )


def machine_body(status: dict[str, Any], overruled: list[dict[str, Any]], names: Any, reviewing: bool) -> str:
    """The ``/machine`` page's body: ``status`` is :meth:`TeamMachine.status
    <jaxclust.active.team_machine.TeamMachine.status>`, ``overruled`` its :meth:`overruled
    <jaxclust.active.team_machine.TeamMachine.overruled>` list, ``names`` the items' names."""
    usage, routed = status["usage"], status["routed"]
    state = (
        f"<p class=err>Stopped: {html.escape(status['stopped'])}.</p>"
        if status["stopped"]
        else f"<p class=err>Last request failed: {html.escape(status['error'])}</p>"
        if status["error"]
        else ""
    )
    rates = (
        f"<p>Says <i>same</i> about a pair people call different: <b id=false-same>{status['false_same']:.3f}</b>; "
        f"says <i>different</i> about a pair people call the same: <b id=false-different>"
        f"{status['false_different']:.3f}</b> (from <b>{status['n_checked']}</b> checked answers, "
        f"<b>{status['n_unchecked']}</b> answers nobody checked and a prior; "
        "its answers count as evidence wrong at these rates).</p>"
    )
    split = status["split"]
    if split["n_checked"] + split["n_unchecked"]:
        rates += (
            f"<p>Where its replies split, their majority: <b id=split-false-same>{split['false_same']:.3f}</b> "
            f"and <b id=split-false-different>{split['false_different']:.3f}</b> (from {split['n_checked']} "
            f"checked answers and {split['n_unchecked']} nobody checked).</p>"
        )
    counts = (
        f"<p>Since the server started: {routed['machine']} pairs answered by the machine, {routed['majority']} "
        f"by the majority of its replies where they split, {routed['tie']} handed to people because its replies "
        f"tied, {routed['contradicts']} because the model was sure of the "
        f"opposite; {status['for_people']} of those still waiting. {usage['requests']} requests "
        f"({usage['retries']} retries, {usage['failures']} failed), {usage['prompt_tokens']} prompt and "
        f"{usage['completion_tokens']} completion tokens.</p>"
    )
    rows = "".join(
        f"<tr><td>{html.escape(item_label(names, d['i'], 80))}</td>"
        f"<td>{html.escape(item_label(names, d['j'], 80))}</td><td>{WORDS[d['machine']]}</td><td>"
        + ", ".join(f"{html.escape(w)}: {WORDS[a]}" for w, a in sorted(d["people"].items()))
        + "</td></tr>"
        for d in overruled
    )
    return (
        f"<h2>The chat model: {html.escape(status['name'])}</h2>{state}{rates}{counts}{review_switch(reviewing)}"
        f"<h2>Overruled by people ({len(overruled)})</h2><p>Answers of the machine that a person answered "
        "otherwise; both stay in the store, each counted with its annotator's error rate.</p>"
        f"<table id=overruled><tr><th>item</th><th>item</th><th>the machine</th><th>people</th></tr>{rows}</table>"
    )
