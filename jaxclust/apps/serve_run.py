"""``jaxclust serve`` started: the team session opened from the command line's options, then served by Uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jaxclust.active.answer_log import is_sqlite_path
from jaxclust.active.rules import SESSION_RULES
from jaxclust.active.store import AnswerStore
from jaxclust.active.team import TeamSession
from jaxclust.active.team_machine import TeamMachine
from jaxclust.apps.annotate import check_annotate_options
from jaxclust.apps.items import Items, read_items
from jaxclust.apps.opening import DEFAULT_STOP_ENTROPY, DEFAULT_STRATEGY, open_machine, open_session
from jaxclust.apps.serve import make_app
from jaxclust.apps.serve_access import allowed_hosts, check_token, is_loopback, new_token
from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_rule

__all__ = ["open_team", "run_serve"]


def open_team(
    data: str | Path,
    store: str | Path,
    *,
    n_queries: int | None = None,
    double: float = 0.1,
    strategy: str = DEFAULT_STRATEGY,
    stop_entropy: float | None = DEFAULT_STOP_ENTROPY,
    random_state: int = 0,
    sampler_options: dict[str, int] | None = None,
    text_column: str | None = None,
    name_column: str | None = None,
    context_column: str | None = None,
    ignore_columns: Any = (),
    spelled: dict[str, str] | None = None,
    model: Any = None,
    featurizer: Any = None,
    machine: dict[str, Any] | None = None,
) -> tuple[Items, AnswerStore, TeamSession]:
    """Read the items as ``jaxclust annotate`` does, open the store (an SQLite store shared, so that
    ``jaxclust store stats`` and ``annotate --shared`` sessions work beside the server) and make the team
    session (not started). Every option is checked before anything is read or created. ``featurizer``: texts
    only, as for :func:`jaxclust.apps.opening.open_session`. ``machine``: a chat model that answers first
    (:func:`jaxclust.apps.opening.open_machine`'s settings)."""
    check_annotate_options(
        data,
        store,
        0 if n_queries is None else n_queries,
        strategy,
        1,
        None,
        stop_entropy,
        spelled,
        text_column=text_column,
        name_column=name_column,
        context_column=context_column,
        ignore_columns=ignore_columns,
        sampler_options=sampler_options,
    )
    flag = (spelled or {}).get
    check_rule(SESSION_RULES["double"], double, flag("double", "double"))
    items = read_items(data, text_column, name_column, context_column, spelled, tuple(ignore_columns or ()))
    chat = None
    if machine is not None:
        chat = open_machine(
            items,
            machine,
            flag,
            lambda oracle, check: TeamMachine(oracle, check, random_state=random_state),
            store,
        )
    opened = open_session(
        items,
        store,
        shared=is_sqlite_path(Path(store)),
        model=model,
        random_state=random_state,
        sampler_options=sampler_options,
        featurizer=featurizer,
        strategy=strategy,
        stop_entropy=stop_entropy,
    )
    answers = opened.store
    try:
        team = TeamSession(
            opened.learner,
            opened.X,
            answers,
            n_queries=n_queries,
            double=double,
            random_state=random_state,
            machine=chat,
        )
    except BaseException:
        answers.close()
        raise
    return items, answers, team


def run_serve(
    data: str | Path,
    store: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    say=print,
    **options: Any,
) -> None:
    """``jaxclust serve``: open the team session (:func:`open_team`, with ``options``) and serve it until
    interrupted. A host other than a loopback address needs a token: ``token``, or one generated and printed."""
    import socket

    import uvicorn

    if token is not None:
        check_token(token, flag=(options.get("spelled") or {}).get("token", "token"))
    items, answers, team = open_team(data, store, **options)
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named: asyncio then sets TCP_NODELAY on each connection (else a reply sent in two writes
        # waits ~40 ms for the client's delayed acknowledgement)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise InvalidInputError(
                f"--port: cannot listen on {host}:{port} ({exc.strerror or exc})"
            ) from exc
        sock.listen(2048)  # connections wait in the backlog until Uvicorn accepts them
        bound, port = sock.getsockname()[:2]
        local = is_loopback(bound)  # from the address bound, never from the name's text
        if token is None and not local:
            token = new_token()
        web = make_app(team, items, token=token, hosts=allowed_hosts(bound, token))
        team.start()
        shown = f"[{host}]" if ":" in host else host
        address = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
        say(
            f"{len(items)} items, {len(answers)} answers in {store}; serving on {address}"
            + ("" if local else " (share this address with the team: it holds the access token)")
        )
        if team.machine is not None:
            say(f"{team.machine.name} answers first; the team answers where it is unsure (see /machine).")
        say("The first fit compiles in the background; questions start at once. Ctrl-C stops the server.")
        config = uvicorn.Config(web, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        team.close()
        answers.close()
