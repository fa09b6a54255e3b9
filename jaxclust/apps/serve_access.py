"""Who may reach the web annotator: the access token, loopback addresses, the names a request may address, and
the middleware that enforces them (:class:`Guard`, with the bound on request bodies).

A server on a loopback address has no token and answers only requests addressed to this machine's own names, so a
page elsewhere cannot reach it through its visitor's browser by pointing its own name at 127.0.0.1 (DNS
rebinding). On any other address every request needs the token. Whether an address is a loopback one is decided
from the address bound, never from the text of a name.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from urllib.parse import quote, urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse

from jaxclust.errors import InvalidInputError

__all__ = [
    "Guard",
    "new_token",
    "check_token",
    "is_loopback",
    "allowed_hosts",
    "LOOPBACK_HOSTS",
    "COOKIE_TOKEN",
]

COOKIE_TOKEN = "jaxclust_token"
#: The names a browser on this machine uses for a server bound to a loopback address (the Host header).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~+/=-]{8,256}")


def new_token() -> str:
    """A random access token (URL-safe, 128 bits)."""
    return secrets.token_urlsafe(16)


def check_token(token: str, flag: str = "token") -> str:
    """``token`` if it can travel in an address, a cookie and an ``Authorization`` header unchanged: 8 to 256
    of the characters ``A-Z a-z 0-9 . _ ~ + / = -``; else ``InvalidInputError`` naming ``flag``."""
    if not isinstance(token, str) or not _TOKEN_CHARS.fullmatch(token):
        raise InvalidInputError(
            f"{flag}: expected 8 to 256 characters among A-Z a-z 0-9 . _ ~ + / = - (it travels in addresses, "
            f"cookies and headers), got {token!r}"
        )
    return token


def is_loopback(address: str) -> bool:
    """Whether ``address`` is a loopback IP address (only this machine can connect). A name is never one: a
    server decides from the address it bound (:func:`jaxclust.apps.serve_run.run_serve`), not from the name it
    was given."""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound: str, token: str | None) -> frozenset[str] | None:
    """The names a request may address (its Host header) for a server bound to the IP address ``bound``:
    without a token on a loopback address only this machine's own names (a web page elsewhere that rebinds its
    name to 127.0.0.1 is refused); with a token any name (the token guards it). None: any."""
    if token is None and is_loopback(bound):
        return LOOPBACK_HOSTS | {bound}
    return None


def _host_name(header: str) -> str:
    """The host part of a Host header (``name``, ``name:port``, ``[v6]:port``), lower case."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _local_target(path: str, query: str) -> str:
    """An address on this server for ``path``: one leading slash (``//name`` and ``/\\name`` would leave it),
    the rest percent-encoded."""
    target = "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")
    return target + (f"?{query}" if query else "")


class Guard:
    """ASGI middleware: the access token (when one is set) and the bound on request bodies."""

    def __init__(self, app, token: str | None, max_body: int, hosts: frozenset[str] | None = None):
        self.app, self.token, self.max_body, self.hosts = app, token, max_body, hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.hosts is not None and _host_name(headers.get("host", "")) not in self.hosts:
            return await _plain(
                send, 421, "request not addressed to this server: open it by the address it printed at start"
            )
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return await _plain(send, 413, f"request body too large (at most {self.max_body} bytes)")
        if self.token is not None:
            request = Request(scope)
            given = request.query_params.get("token")
            scheme, _, credentials = headers.get("authorization", "").strip().partition(" ")
            ok = any(
                t is not None and hmac.compare_digest(t.encode("utf-8", "replace"), self.token.encode())
                for t in (
                    given,
                    request.cookies.get(COOKIE_TOKEN),
                    credentials.strip() if scheme.lower() == "bearer" else None,
                )
            )
            if not ok:
                return await _plain(
                    send, 401, "this server needs its access token: open the address it printed at start"
                )
            if given is not None and scope["method"] == "GET":  # keep it in a cookie, out of the address bar
                rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
                response = RedirectResponse(_local_target(scope["path"], rest), status_code=303)
                response.set_cookie(COOKIE_TOKEN, self.token, httponly=True, samesite="strict")
                return await response(scope, receive, send)
        seen = 0

        async def bounded():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body:
                raise HTTPException(413, f"request body too large (at most {self.max_body} bytes)")
            return message

        return await self.app(scope, bounded, send)


async def _plain(send, status: int, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
