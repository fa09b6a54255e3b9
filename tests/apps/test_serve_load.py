"""The web annotator under load, against 127.0.0.1 only: 20 simulated annotators answer through the JSON API
for 60 s (``JAXCLUST_LOAD_SECONDS`` to change it); every acknowledged answer must be in the store exactly once
and nothing else. Then ``kill -9`` of the server mid-load: after a restart, every answer it acknowledged is in
the store. The figures (answers, p50/p95 time to the next question) go to ``test-artifacts/serve_load.json``;
``benchmarks/bench_serve_load.py`` records them in benchmarks/RESULTS.md."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from jaxclust.active import AnswerStore  # noqa: E402
from jaxclust.apps.serve_load import load_test  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _server  # noqa: E402

SECONDS = float(os.environ.get("JAXCLUST_LOAD_SECONDS", "60"))


def oracle_of(gold):
    return lambda i, j: "must" if gold[i] == gold[j] else "cannot"


def stored(folder: Path) -> Counter:
    with AnswerStore(folder / "answers.sqlite", shared=True) as store:
        return Counter((r["annotator"], r["i"], r["j"], r["answer"]) for r in store.records)


def test_twenty_annotators_for_a_minute_lose_and_duplicate_nothing(tmp_path):
    gold = _server.write_items(tmp_path, n_per=60)
    proc, url = _server.start(tmp_path, "--double", "0.2")
    try:
        result = load_test(url, oracle_of(gold), n_annotators=20, seconds=SECONDS)
        status = json.loads(__import__("urllib.request").request.urlopen(url + "api/status").read())
    finally:
        _server.stop(proc)
    assert result.errors == []
    acked = Counter(result.acknowledged)
    assert max(acked.values()) == 1 and stored(tmp_path) == acked  # nothing lost, duplicated or extra
    assert len({a for a, *_ in acked}) == 20 and status["n_answers"] == len(acked)
    assert status["n_fits"] >= 1  # the model fitted in the background while they answered
    summary = {**result.summary(), "annotators": 20, "n_fits": status["n_fits"], "items": len(gold)}
    (_server.artifacts() / "serve_load.json").write_text(json.dumps(summary, indent=1))
    print(f"\nload: {summary}")


def test_every_acknowledged_answer_survives_kill_9_mid_load(tmp_path):
    gold = _server.write_items(tmp_path, n_per=60)
    proc, url = _server.start(tmp_path, "--double", "0.2")
    box = {}
    runner = threading.Thread(
        target=lambda: box.setdefault("r", load_test(url, oracle_of(gold), n_annotators=20, seconds=60))
    )
    runner.start()
    time.sleep(6.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    runner.join(120)
    result = box["r"]
    assert result.acknowledged and result.errors  # it was answering, and then the server was gone
    acked = Counter(result.acknowledged)
    proc, url = _server.start(tmp_path)  # the restarted server opens the store the killed one left
    try:
        lines = __import__("urllib.request").request.urlopen(url + "export/answers.jsonl").read().splitlines()
    finally:
        _server.stop(proc)
    after = Counter((r["annotator"], r["i"], r["j"], r["answer"]) for r in map(json.loads, lines))
    assert max(after.values()) == 1
    assert (
        not acked - after
    )  # every acknowledged answer is there (one stored as the kill came may be unacknowledged)
    assert sum(after.values()) - sum(acked.values()) <= 20
