"""Fault injection: annotate sessions killed with SIGKILL at random points lose no answer, store none twice, and
resume with exactly the questions an uninterrupted session asks; two processes never share a store.

The sessions run in real subprocesses answering from stdin (a scripted person reading each question and
answering from the item names). The default test drives :func:`jaxclust.apps.annotate.run_annotate` with a NumPy
stand-in sampler (no compilation: each restart costs a Python and JAX import); the slow one drives the real
``jaxclust annotate`` command with the DPMM.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from jaxclust.active import AnswerStore
from jaxclust.apps.annotate import run_annotate
from jaxclust.errors import StoreRecoveryWarning

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STANDIN = HERE.parent / "active"  # _standin.py, the stand-in sampler the session tests share
sys.path.insert(0, str(STANDIN))
from _standin import StandInSampler, blobs, write_items_csv  # noqa: E402

N_QUERIES = 30
SESSION = {
    "n_queries": N_QUERIES,
    "strategy": "batch",
    "batch_size": 3,
    "random_state": 3,
    "stop_entropy": None,
}

DRIVER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    from _standin import StandInSampler
    from jaxclust.apps.annotate import run_annotate

    run_annotate(sys.argv[1], sys.argv[2], model=StandInSampler(), **{session!r})
    """
)


def _env(tmp_path: Path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": "cpu",
        # restarts reuse the compiled selection instead of compiling it again (cache in the test's folder)
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax_cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }


ITEM = re.compile(r"^  [abc](\d+)$")  # an item's line: its name, the class letter and the row index


def _pair(lines: list[str]) -> tuple[int, int]:
    """The pair of the last question among the output ``lines`` (each item is shown by its name, ``  b9``)."""
    a, b = [int(m.group(1)) for m in map(ITEM.match, lines) if m is not None][-2:]
    return min(a, b), max(a, b)


def _gold(names: list[str], i: int, j: int) -> str:
    return "y" if names[i][0] == names[j][0] else "n"


def _reference(data: Path, store: Path, names: list[str]) -> list[tuple[int, int, str]]:
    """The uninterrupted session, in this process: every (i, j, answer) in the order asked."""
    out = io.StringIO()

    def reply(_prompt: str) -> str:
        return _gold(names, *_pair(out.getvalue().splitlines()))

    run_annotate(data, store, model=StandInSampler(), input_fn=reply, output=out, **SESSION)
    return [(r["i"], r["j"], r["answer"]) for r in AnswerStore(store).records]


class Session:
    """A subprocess session whose questions are read from stdout by a thread and answered by the test."""

    def __init__(self, cmd: list[str], env: dict):
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
        )
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_question(self, timeout: float = 120.0) -> tuple[int, int] | None:
        """Block until the next question is shown (its pair) or the session ends (None)."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if line is None:
                return None
            self.seen.append(line)
            if ITEM.match(line) and len(self.seen) >= 3 and self.seen[-3].startswith("Question"):
                return _pair(self.seen)

    def answer(self, reply: str) -> None:
        self.proc.stdin.write(reply + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        assert self.proc.returncode == -signal.SIGKILL, self.proc.stderr.read()[-3000:]


def _check_prefix(store: Path, want: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    with warnings.catch_warnings():  # a torn line left by the test itself is repaired by whoever opens first
        warnings.simplefilter("ignore", StoreRecoveryWarning)
        with AnswerStore(store) as opened:
            got = [(r["i"], r["j"], r["answer"]) for r in opened.records]
    assert got == want[: len(got)], "stored answers are not the uninterrupted session's prefix"
    assert len({(i, j) for i, j, _ in got}) == len(got), "a pair is stored twice"
    return got


def test_annotate_session_killed_20_times_loses_nothing_and_asks_what_an_uninterrupted_one_asks(tmp_path):
    X, y = blobs(n_per=12)
    data = tmp_path / "items.csv"
    write_items_csv(data, X, y)
    names = [line.split(",")[0] for line in data.read_text().splitlines()[1:]]
    want = _reference(data, tmp_path / "reference.jsonl", names)
    assert len(want) == N_QUERIES and len({(i, j) for i, j, _ in want}) == N_QUERIES

    store = tmp_path / "answers.jsonl"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(here=str(STANDIN), session=SESSION))
    cmd, env = [sys.executable, str(script), str(data), str(store)], _env(tmp_path)
    rng = np.random.default_rng(20240601)  # the kill schedule
    kills = torn = 0
    modes = []
    while kills < 22:
        mode = ("startup", "at_prompt", "right_after_answer", "after_answer_delay")[rng.integers(4)]
        s = Session(cmd, env)
        acked = 0
        if mode == "startup":  # anywhere in start-up: imports, the first fit, the fit record's write
            time.sleep(rng.uniform(0.0, 1.5))
        else:
            base = len(_check_prefix(store, want)) if store.exists() else 0
            sent = 0
            for _ in range(int(rng.integers(0, 4)) + (mode == "at_prompt")):
                pair = s.next_question()
                if pair is None:
                    break
                acked = base + sent  # answers sent before a question shows are durable
                assert pair == want[base + sent][:2]  # the question an uninterrupted session asks
                if mode == "at_prompt" and sent == 0 and rng.random() < 0.5:
                    break  # killed while waiting for the person
                s.answer(_gold(names, *pair))
                sent += 1
            if mode == "after_answer_delay":  # during the write, the selection or a refit
                time.sleep(rng.uniform(0.0, 0.05))
            # right_after_answer: most likely while the answer is being written and fsync'd
        s.kill()
        kills += 1
        modes.append(mode)
        got = _check_prefix(store, want) if store.exists() else []
        assert len(got) >= acked  # every answer seen to be durable is there
        if store.exists() and rng.random() < 0.2:  # a crash in the middle of a write leaves a torn line
            with open(store, "ab") as fh:
                fh.write(b'{"answer": "must", "i": 1, "j": 2, "kept": tr')
            torn += 1
    # the last run is left alone: it must finish the session with the uninterrupted one's questions
    s = Session(cmd, env)
    while (pair := s.next_question()) is not None:
        s.answer(_gold(names, *pair))
    s.proc.wait(timeout=120)
    err = s.proc.stderr.read()
    assert s.proc.returncode == 0, err[-3000:]
    assert _check_prefix(store, want) == want
    assert f"Done: the target of {N_QUERIES} questions is reached." in "\n".join(s.seen)
    assert kills >= 20 and {"startup", "at_prompt", "right_after_answer", "after_answer_delay"} <= set(modes)
    if torn:  # the torn fragments were set aside, byte for byte, never mixed into the answers
        side = [json.loads(x) for x in (tmp_path / "answers.jsonl.corrupt").read_text().splitlines()]
        assert all("kept" in e["text"] for e in side) and len(side) >= 1


# --- two processes, one store ------------------------------------------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sys
    from jaxclust.active.store import AnswerStore

    store = AnswerStore(sys.argv[1], meta={"n": 10})
    print("open", flush=True)
    for k, line in enumerate(sys.stdin):
        store.append(k, k + 1, "must")
        print("stored", flush=True)
    store.close()
    print("closed", flush=True)
    """
)

CONTENDER = textwrap.dedent(
    """
    import sys
    from jaxclust.active.store import AnswerStore
    from jaxclust.errors import StoreLockedError

    try:
        store = AnswerStore(sys.argv[1], meta={"n": 10}, wait=float(sys.argv[2]))
    except StoreLockedError as exc:
        print(f"LOCKED pid={exc.holder.get('pid')} :: {exc}")
        sys.exit(3)
    store.append(7, 9, "cannot")
    print("appended", len(store.records))
    """
)


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_a_second_process_gets_a_clear_error_or_waits_and_neither_corrupts_the_store(tmp_path, suffix):
    store = tmp_path / f"answers{suffix}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        holder.stdin.write("a\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "stored"
        # a second process while the first holds the store: a named error that names the path and the holder
        res = subprocess.run(
            [sys.executable, "-c", CONTENDER, str(store), "0"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert res.returncode == 3, res.stderr[-2000:]
        assert f"pid={holder.pid}" in res.stdout and str(store) in res.stdout and "in use" in res.stdout
        # the first one goes on writing, untroubled
        holder.stdin.write("b\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "stored"
        # a second process that waits gets the store once the first closes it
        waiter = subprocess.Popen(
            [sys.executable, "-c", CONTENDER, str(store), "60"], stdout=subprocess.PIPE, text=True, env=env
        )
        time.sleep(0.5)
        assert waiter.poll() is None  # still waiting
        holder.stdin.close()
        assert holder.stdout.read().strip() == "closed"
        out, _ = waiter.communicate(timeout=60)
        assert waiter.returncode == 0 and out.strip() == "appended 3"
    finally:
        holder.kill()
        holder.wait()
    recs = [(r["i"], r["j"], r["answer"]) for r in AnswerStore(store).records]
    assert recs == [(0, 1, "must"), (1, 2, "must"), (7, 9, "cannot")]
    assert not (tmp_path / f"answers{suffix}.lock").exists()  # a clean close removes the lock file


def test_a_killed_holder_never_leaves_the_store_locked(tmp_path):
    store = tmp_path / "answers.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert holder.stdout.readline().strip() == "open"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert (tmp_path / "answers.jsonl.lock").exists()  # left behind by the kill, but no longer locked
    with AnswerStore(store, meta={"n": 10}) as s:
        s.append(0, 1, "must")
    assert [r["answer"] for r in AnswerStore(store).records] == ["must"]


# --- the real command -------------------------------------------------------------------------------------


def test_annotate_command_refuses_a_store_in_use_in_one_line(tmp_path):
    X, y = blobs()
    data, store = tmp_path / "items.csv", tmp_path / "answers.sqlite"
    write_items_csv(data, X, y)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        res = subprocess.run(
            [sys.executable, "-m", "jaxclust.apps.cli", "annotate", str(data), "--store", str(store)],
            capture_output=True,
            text=True,
            env={**env, "JAX_PLATFORMS": "cpu"},
            timeout=120,
            input="",
        )
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: answer store") and str(store) in lines[0]
    assert f"pid {holder.pid}" in lines[0] and "Traceback" not in res.stderr + res.stdout


@pytest.mark.slow
def test_jaxclust_annotate_with_the_dpmm_killed_20_times(tmp_path):
    X, y = blobs(n_per=8, spread=1.0)
    data, store = tmp_path / "items.csv", tmp_path / "answers.sqlite"
    write_items_csv(data, X, y)
    names = [line.split(",")[0] for line in data.read_text().splitlines()[1:]]
    opts = ["--n-queries", "16", "--n-burnin", "5", "--n-samples", "3", "--n-chains", "2"]
    opts += ["--batch-size", "3", "--stop-entropy", "0", "--seed", "1"]
    cmd = [sys.executable, "-m", "jaxclust.apps.cli", "annotate", str(data), "--store"]
    env = _env(tmp_path)

    def run_through(path: Path) -> list[tuple[int, int, str]]:
        s = Session([*cmd, str(path), *opts], env)
        while (pair := s.next_question()) is not None:
            s.answer(_gold(names, *pair))
        assert s.proc.wait(timeout=300) == 0, s.proc.stderr.read()[-3000:]
        assert "Done: the target of 16 questions is reached." in s.seen, "\n".join(s.seen[-20:])
        return [(r["i"], r["j"], r["answer"]) for r in AnswerStore(path).records]

    want = run_through(tmp_path / "reference.sqlite")
    assert len(want) == 16
    rng = np.random.default_rng(7)
    for _ in range(20):
        s = Session([*cmd, str(store), *opts], env)
        for _ in range(int(rng.integers(0, 2))):
            pair = s.next_question(timeout=300)
            if pair is None:
                break
            s.answer(_gold(names, *pair))
        time.sleep(rng.uniform(0.0, 0.3))
        s.kill()
        _check_prefix(store, want)
    assert run_through(store) == want
