"""The HTTP pieces of the web annotator's pages (:mod:`jaxclust.apps.serve`): the style sheet, the keyboard script
(the keys of :mod:`jaxclust.active.replies`), the security headers of every response, reading a posted form, a
JSON object and a pair of item numbers, and the error page (JSON under ``/api/``).
"""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs

from jaxclust.active.replies import ANSWERS, KEYS
from jaxclust.errors import MissingDependencyError

try:
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise MissingDependencyError(
        'jaxclust serve needs Starlette and Uvicorn: pip install "jaxclust[serve]"', name="starlette"
    ) from exc

__all__ = ["HEADERS", "SCRIPT", "SHORTCUTS", "STYLE", "error_page", "form_of", "json_object", "pair_of"]

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
nav{background:#243447;color:#fff;padding:.5em 1em;display:flex;gap:1em;align-items:center;flex-wrap:wrap}
nav a{color:#cde}nav .who{margin-left:auto}main{max-width:70em;margin:1em auto;padding:0 1em}
.pair{display:flex;gap:1em}.card{flex:1;background:#fff;border:1px solid #ccd;border-radius:6px;padding:1em}
.name{font-weight:600;margin-bottom:.4em}.conf{color:#445;margin:.2em 0}
.context{color:#555;font-size:.9em;margin-top:.4em}
img.item{max-width:100%;max-height:20em}img.small{max-width:26em}.why{color:#445;margin:.6em 0}
.buttons{display:flex;gap:.6em;margin:1em 0;flex-wrap:wrap}button{font-size:1em;padding:.5em 1em;border-radius:5px;
border:1px solid #889;cursor:pointer}button.must{background:#d7f0d7}button.cannot{background:#f5d6d6}
button.unknown{background:#eee}button.undo{background:#fff3cd}kbd{background:#eee;border:1px solid #bbb;
border-radius:3px;padding:0 .3em;font-size:.85em}.msg{background:#eef4ff;border-left:4px solid #58f;padding:.5em}
.err{background:#fdecea;border-left:4px solid #d33;padding:.5em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccd;padding:.25em .6em;text-align:left;vertical-align:top}.progress{color:#445}
"""

#: The page's keyboard shortcuts: the keys of :mod:`jaxclust.active.replies`.
SHORTCUTS = {k: a for a in (*ANSWERS, "undo") for k in KEYS[a]}

SCRIPT = """
(function () {
  var keys = SHORTCUTS;
  var sent = false;
  document.addEventListener("keydown", function (e) {
    if (sent || e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName)) return;
    var b = document.querySelector('button[data-key="' + keys[e.key.toLowerCase()] + '"]');
    if (!b) return;
    e.preventDefault();
    sent = true;
    b.click();
  });
})();
""".replace("SHORTCUTS", json.dumps(SHORTCUTS))

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'self'; script-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


async def form_of(request: Request) -> dict[str, str]:
    """The fields of a posted form (``application/x-www-form-urlencoded``, the pages' only kind), first value
    of each."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPException(
            415, f"expected a form (application/x-www-form-urlencoded), got {kind or 'no body type'}"
        )
    try:
        fields = parse_qs(
            (await request.body()).decode("utf-8"), max_num_fields=20, strict_parsing=False, errors="strict"
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise HTTPException(400, f"the form could not be read ({exc})") from exc
    return {k: v[0] for k, v in fields.items()}


def pair_of(fields: dict, a: str, b: str, what: str, form: bool = True) -> tuple[int, int]:
    """Two item numbers: a form's decimal digits (``int`` would read ``"1_1"`` as 11), or with ``form=False``
    JSON integers (not strings, floats or booleans)."""

    def one(v):
        if not form and isinstance(v, int) and not isinstance(v, bool):
            return v
        if form and isinstance(v, str) and re.fullmatch(r"[0-9]{1,12}", v):
            return int(v)
        raise HTTPException(400, f"{a}, {b}: expected the item numbers of {what} (integers), got {v!r}")

    return one(fields.get(a)), one(fields.get(b))


async def json_object(request: Request, shape: str) -> dict:
    """The request's body as a JSON object; 400 for anything else (nesting too deep to read included)."""
    try:
        body = json.loads(await request.body())
    except (ValueError, RecursionError) as exc:
        raise HTTPException(400, f"expected a JSON object {shape}") from exc
    if not isinstance(body, dict):
        raise HTTPException(400, f"expected a JSON object {shape}")
    return body


def error_page(status: int, text: str, request: Request):
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": text}, status_code=status, headers=HEADERS)
    body = (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>error</title>"
        f"<link rel=stylesheet href=/static/style.css></head><body><main><p class=err>{html.escape(text)}</p>"
        "<p><a href=/>back to the questions</a></p></main></body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=HEADERS)
