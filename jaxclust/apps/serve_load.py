"""A load test for ``jaxclust serve``: simulated annotators answering through the JSON API for a fixed time.

:func:`load_test` runs ``n_annotators`` threads against a server on this machine (a loopback address only: it
never loads someone else's server); each asks for a question, answers it from ``oracle(i, j)`` and records the
acknowledged answer and the time from sending the answer to receiving the next question (the reply of
``POST /api/answer`` holds it). It stops by itself after ``seconds``, or when the server stops answering (a
server killed mid-load: every answer it acknowledged before is still recorded).

:func:`start_server` runs ``jaxclust serve`` in a child process on a free port of 127.0.0.1 and returns its
address once it listens; :func:`stop_server` stops it as Ctrl-C would.

Used by the test suite and by ``benchmarks/bench_serve_load.py``; needs only the standard library.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np

from jaxclust.errors import InvalidInputError

__all__ = ["load_test", "LoadResult", "start_server", "stop_server"]


@dataclass
class LoadResult:
    """What a load test saw: ``acknowledged`` answers ``(annotator, i, j, answer)`` in the order acknowledged,
    ``latencies`` (seconds from sending an answer to holding the next question), ``errors`` (messages of
    failed requests), ``seconds`` (wall time) and ``idle`` (times an annotator found no free question)."""

    acknowledged: list[tuple[str, int, int, str]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    idle: int = 0

    def summary(self) -> dict[str, float]:
        lat = np.asarray(self.latencies) if self.latencies else np.zeros(1)
        return {
            "answers": len(self.acknowledged),
            "answers_per_second": len(self.acknowledged) / max(self.seconds, 1e-9),
            "p50_ms": float(np.percentile(lat, 50) * 1e3),
            "p95_ms": float(np.percentile(lat, 95) * 1e3),
            "max_ms": float(lat.max() * 1e3),
            "errors": len(self.errors),
            "idle": self.idle,
            "seconds": self.seconds,
        }


def load_test(
    base_url: str,
    oracle: Callable[[int, int], str],
    n_annotators: int = 20,
    seconds: float = 60.0,
    token: str | None = None,
    stop_on_error: bool = True,
) -> LoadResult:
    """Simulate ``n_annotators`` people answering for ``seconds`` (see the module docstring)."""
    url = urlsplit(base_url)
    if url.scheme != "http" or url.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise InvalidInputError(
            f"base_url: a load test runs against this machine only (http://127.0.0.1:PORT), got {base_url!r}"
        )
    result = LoadResult()
    lock = threading.Lock()
    deadline = time.monotonic() + float(seconds)
    stop = threading.Event()

    def worker(k: int) -> None:
        who = f"annotator-{k:02d}"
        headers = {"X-Annotator": who, "Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)

        def call(method: str, path: str, body: dict | None = None) -> dict:
            conn.request(method, path, None if body is None else json.dumps(body), headers)
            reply = conn.getresponse()
            data = reply.read()
            if reply.status != 200:
                raise RuntimeError(f"{method} {path}: {reply.status} {data[:200]!r}")
            return json.loads(data)

        try:
            q = call("GET", "/api/question")["question"]
            while not stop.is_set() and time.monotonic() < deadline:
                if q is None:
                    with lock:
                        result.idle += 1
                    time.sleep(0.2)
                    q = call("GET", "/api/question")["question"]
                    continue
                answer = oracle(q["i"], q["j"])
                t0 = time.perf_counter()
                got = call("POST", "/api/answer", {"i": q["i"], "j": q["j"], "answer": answer})
                took = time.perf_counter() - t0
                stored = got["stored"]
                with lock:
                    result.acknowledged.append((who, stored["i"], stored["j"], stored["answer"]))
                    result.latencies.append(took)
                q = got["next"]
        except (OSError, RuntimeError, http.client.HTTPException, ValueError) as exc:
            with lock:
                result.errors.append(f"{who}: {exc}")
            if stop_on_error:
                stop.set()
        finally:
            conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(n_annotators)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60.0)
    result.seconds = time.perf_counter() - t0
    return result


def start_server(data, store, *args: str, timeout: float = 180.0) -> tuple[subprocess.Popen, str]:
    """``jaxclust serve DATA --store STORE --port 0 ARGS...`` in a child process; returns the process and its
    address (``http://127.0.0.1:PORT/``) once it listens. Its output stays on the process's ``stdout``."""
    cmd = [
        sys.executable,
        "-m",
        "jaxclust.apps.cli",
        "serve",
        str(data),
        "--store",
        str(store),
        "--port",
        "0",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*cmd, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"serving on (http://\S+)", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    raise RuntimeError("jaxclust serve did not start:\n" + "".join(seen) + (proc.stdout.read() or ""))


def stop_server(proc: subprocess.Popen, timeout: float = 60.0) -> str:
    """Stop a server from :func:`start_server` as Ctrl-C would (killed if it takes longer than ``timeout``
    seconds); returns what it printed since it started listening."""
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out
