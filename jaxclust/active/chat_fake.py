"""A stand-in OpenAI-compatible chat endpoint on 127.0.0.1 that answers :class:`~jaxclust.active.chat.ChatOracle`'s
question from gold labels, wrong at set rates: for tests and experiments without a network or a model, and to try
a pipeline before paying for one.

It reads the two items from the prompt (the ``Item A:`` and ``Item B:`` lines), looks up their labels and answers
"yes" or "no". Its misbehaviours are parameters: asymmetric error rates (decided once per pair, as a model that
is wrong about a pair is wrong about it every time it is asked, plus ``noise``, a chance that any single reply
flips), garbled replies, 429s, 503s, slow answers, a required key, and fewer choices than asked for.

    with FakeChatServer(texts, labels, false_same=0.25, false_different=0.05, seed=0) as server:
        oracle = ChatOracle(texts, ChatEndpoint(server.url, "fake", api_key_env=None))
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from jaxclust.active.oracles import shorten

__all__ = ["FakeChatServer"]

_ITEM = re.compile(r"^Item ([AB]): (.*)$", re.MULTILINE)


class FakeChatServer:
    """An OpenAI-compatible ``/v1/chat/completions`` on ``127.0.0.1`` (a free port), answering from ``labels``.

    Parameters
    ----------
    texts, labels : sequences (n,)
        The items as :class:`~jaxclust.active.chat.ChatOracle` shows them, and their gold labels.
    false_same, false_different : float
        Chance that the server believes "same" about a different pair, and "different" about a same pair.
    noise : float
        Chance that one reply says the opposite of the server's belief about the pair.
    garble : float
        Chance that one reply is not an answer at all.
    rate_limit_every : int or None
        Every k-th request is refused with 429 (``Retry-After: 0``).
    fail_first : int
        The first requests answered with 503.
    delay : float
        Seconds before each response.
    key : str or None
        The bearer key required (401 otherwise).
    max_choices : int or None
        At most this many choices per response, whatever ``n`` asked.
    seed : int
    """

    def __init__(
        self,
        texts: Sequence[str],
        labels: Sequence,
        false_same: float = 0.0,
        false_different: float = 0.0,
        noise: float = 0.0,
        garble: float = 0.0,
        rate_limit_every: int | None = None,
        fail_first: int = 0,
        delay: float = 0.0,
        key: str | None = None,
        max_choices: int | None = None,
        max_chars: int = 1500,
        seed: int = 0,
    ):
        self.label_of: dict[str, object] = {}
        for t, y in zip(texts, labels, strict=True):
            self.label_of.setdefault(shorten(t, max_chars), y)
        self.false_same, self.false_different = float(false_same), float(false_different)
        self.noise, self.garble = float(noise), float(garble)
        self.rate_limit_every, self.fail_first = rate_limit_every, int(fail_first)
        self.delay, self.key, self.max_choices = float(delay), key, max_choices
        self.rng = random.Random(seed)
        self.beliefs: dict[tuple[str, str], bool] = {}  # the server's verdict per pair, decided once
        self.requests: list[dict] = []  # every request's body, in order
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def belief(self, a: str, b: str) -> bool | None:
        """Whether the server says "same" about the items shown as ``a`` and ``b`` (None: an unknown item)."""
        if a not in self.label_of or b not in self.label_of:
            return None
        key = (min(a, b), max(a, b))
        if key not in self.beliefs:
            same = self.label_of[a] == self.label_of[b]
            wrong = self.rng.random() < (self.false_different if same else self.false_same)
            self.beliefs[key] = same != wrong
        return self.beliefs[key]

    def _reply(self, prompt: str) -> str:
        items = dict(_ITEM.findall(prompt))
        if self.rng.random() < self.garble:
            return self.rng.choice(["As an AI, I cannot say.", "", "Maybe?", "It depends on the context."])
        same = self.belief(items.get("A", ""), items.get("B", ""))
        if same is None:
            return "I do not know these items."
        if self.rng.random() < self.noise:
            same = not same
        return (
            self.rng.choice(["Yes", "yes.", "Yes - same category"])
            if same
            else self.rng.choice(["No", "no."])
        )

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                return

            def _send(self, code: int, body: dict, headers: dict | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout tests make it): nobody to answer

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    return self._send(400, {"error": {"message": "body is not JSON"}})
                with server.lock:
                    server.requests.append(body)
                    k = len(server.requests)
                if server.delay:
                    time.sleep(server.delay)
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if server.key is not None and self.headers.get("Authorization") != f"Bearer {server.key}":
                    return self._send(401, {"error": {"message": "Incorrect API key provided"}})
                if k <= server.fail_first:
                    return self._send(503, {"error": {"message": "overloaded"}})
                if server.rate_limit_every and k % server.rate_limit_every == 0:
                    return self._send(429, {"error": {"message": "rate limit"}}, {"Retry-After": "0"})
                prompt = " ".join(
                    m.get("content", "") for m in body.get("messages", []) if isinstance(m, dict)
                )
                n = int(body.get("n", 1))
                if server.max_choices is not None:
                    n = min(n, server.max_choices)
                with server.lock:
                    replies = [server._reply(prompt) for _ in range(n)]
                choices = [
                    {"index": c, "message": {"role": "assistant", "content": r}, "finish_reason": "stop"}
                    for c, r in enumerate(replies)
                ]
                usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": n}
                return self._send(200, {"object": "chat.completion", "choices": choices, "usage": usage})

        return Handler
