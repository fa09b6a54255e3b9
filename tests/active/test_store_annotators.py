"""The answer store records who answered, undoes by appending (never deleting), keeps older stores readable,
and lets several sessions share one SQLite store: exclusive and shared modes exclude each other with named
errors, a question claimed by a live session is never handed to another, a dead session's claims are released.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxclust.active.store import AnswerStore, check_annotator
from jaxclust.errors import (
    InvalidInputError,
    StoreError,
    StoreLockedError,
    StoreMismatchError,
    StoreRecoveryWarning,
)

REPO = Path(__file__).resolve().parents[2]
FIT = {
    "n_fit": 0,
    "seed": 1,
    "n_answers": 0,
    "round": 1,
    "pos": 0,
    "warm": False,
    "n_burnin": None,
    "settings": "s",
    "final_labels": None,
}


def _triples(path, annotators: bool = False):
    with AnswerStore(path) as s:
        if annotators:
            return [(r["i"], r["j"], r["answer"], r["annotator"]) for r in s.records]
        return [(r["i"], r["j"], r["answer"]) for r in s.records]


# --- who answered ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_each_answer_keeps_who_gave_it(tmp_path, suffix):
    path = tmp_path / f"a{suffix}"
    with AnswerStore(path, meta={"n": 10}) as s:
        s.append(0, 1, "must", annotator="alice")
        s.append(2, 3, "cannot", annotator="bob")
        s.append(4, 5, "unknown")  # not recorded
    assert _triples(path, annotators=True) == [
        (0, 1, "must", "alice"),
        (2, 3, "cannot", "bob"),
        (4, 5, "unknown", None),
    ]


@pytest.mark.parametrize("bad", ["", " alice", "a\nb", 3, "x" * 101])
def test_a_bad_annotator_name_is_a_named_error_and_stores_nothing(tmp_path, bad):
    with AnswerStore(tmp_path / "a.jsonl") as s:
        with pytest.raises(InvalidInputError, match="^annotator: expected a name"):
            s.append(0, 1, "must", annotator=bad)
        assert s.records == []
    with pytest.raises(InvalidInputError, match="^--annotator: "):
        check_annotator(bad, "--annotator")


def test_a_version_1_sqlite_store_gains_the_annotator_column_and_loses_nothing(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)  # the schema jaxclust wrote before annotators were recorded
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute(
        "CREATE TABLE answers (seq INTEGER PRIMARY KEY AUTOINCREMENT, i INTEGER, j INTEGER, answer TEXT,"
        " kept INTEGER, round INTEGER)"
    )
    con.execute("CREATE TABLE fits (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)")
    con.executemany(
        "INSERT INTO meta VALUES (?, ?)", [("store", '"jaxclust answers"'), ("version", "1"), ("n", "10")]
    )
    con.executemany(
        "INSERT INTO answers (i, j, answer, kept, round) VALUES (?, ?, ?, ?, ?)",
        [(0, 1, "must", 1, 1), (2, 3, "cannot", 0, 1)],
    )
    con.commit()
    con.close()
    with AnswerStore(path, meta={"n": 10}) as s:
        assert [(r["i"], r["j"], r["kept"], r["annotator"]) for r in s.records] == [
            (0, 1, True, None),
            (2, 3, False, None),
        ]
        s.append(4, 5, "must", annotator="carol")
        assert s.meta["version"] == 2
    assert _triples(path, annotators=True) == [
        (0, 1, "must", None),
        (2, 3, "cannot", None),
        (4, 5, "must", "carol"),
    ]


def test_a_version_1_jsonl_store_keeps_its_bytes_and_says_version_2_before_new_records(tmp_path):
    path = tmp_path / "old.jsonl"
    old = (
        b'{"meta": {"n": 10, "store": "jaxclust answers", "version": 1}}\n'
        b'{"answer": "must", "i": 0, "j": 1, "kept": true, "round": 1}\n'
    )
    path.write_bytes(old)
    with AnswerStore(path) as s:
        assert s.records[0]["annotator"] is None
        s.append(2, 3, "cannot", annotator="dan")
    data = path.read_bytes()
    assert data.startswith(old)  # the old records, byte for byte
    lines = [json.loads(x) for x in data[len(old) :].splitlines()]
    assert lines[0] == {"meta": {"version": 2}} and lines[1]["annotator"] == "dan"


def test_a_store_from_a_newer_jaxclust_is_refused_untouched(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_bytes(b'{"meta": {"store": "jaxclust answers", "version": 3}}\n')
    with pytest.raises(StoreError, match=r"new.jsonl: was written by a newer jaxclust \(store format 3"):
        AnswerStore(path)
    assert path.read_bytes() == b'{"meta": {"store": "jaxclust answers", "version": 3}}\n'


def test_a_mismatched_store_raises_the_named_mismatch_error(tmp_path):
    with AnswerStore(tmp_path / "a.jsonl", meta={"n": 10}):
        pass
    with pytest.raises(StoreMismatchError, match="was created with n=10, this session has n=11") as info:
        AnswerStore(tmp_path / "a.jsonl", meta={"n": 11})
    assert (info.value.key, info.value.stored, info.value.given) == ("n", 10, 11)
    assert isinstance(info.value, InvalidInputError)  # what callers caught before


# --- undo ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_undo_appends_a_record_and_never_deletes_the_answer(tmp_path, suffix):
    path = tmp_path / f"a{suffix}"
    with AnswerStore(path, meta={"n": 10}) as s:
        s.append(0, 1, "must", annotator="alice")
        s.append(2, 3, "cannot", annotator="bob")
        s.append(4, 5, "must", annotator="alice")
        size = path.stat().st_size
        assert s.undo("alice") == {
            "i": 4,
            "j": 5,
            "answer": "must",
            "kept": True,
            "round": 0,
            "annotator": "alice",
        }
        assert s.undo("alice")["j"] == 1  # alice's answer before that; bob's stays
        assert s.undo("alice") is None  # nothing of alice's is left
        assert path.stat().st_size >= size
    with AnswerStore(path) as s:  # durable: a reopened store knows what was undone
        assert [(r["i"], r["annotator"]) for r in s.records] == [(2, "bob")]
        assert [(a["i"], a["undone"]) for a in s.all_answers] == [(0, True), (2, False), (4, True)]
        s.append(4, 5, "cannot", annotator="alice")  # the pair answered again
        assert s.undo() is not None and s.records[-1]["annotator"] == "bob"  # None: anyone's last


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_a_fit_made_after_an_undone_answer_is_no_longer_offered_for_resuming(tmp_path, suffix):
    path = tmp_path / f"a{suffix}"
    with AnswerStore(path, meta={"n": 10}) as s:
        s.append(0, 1, "must")
        s.append_fit({**FIT, "n_fit": 0, "n_answers": 1})
        s.append(2, 3, "must")
        s.append_fit({**FIT, "n_fit": 1, "n_answers": 2})
        s.undo()
        assert [f["n_fit"] for f in s.fits] == [0]
        s.append(2, 3, "cannot")
        s.append_fit({**FIT, "n_fit": 1, "n_answers": 2})
    with AnswerStore(path) as s:
        assert [(f["n_fit"], f["log"]) for f in s.fits] == [(0, [1, 0]), (1, [3, 1])]


def test_an_undo_record_whose_answer_moved_still_undoes_that_answer(tmp_path):
    path = tmp_path / "a.jsonl"
    with AnswerStore(path, meta={"n": 10}) as s:
        s.append(0, 1, "must", annotator="a")
        s.append(2, 3, "must", annotator="a")
        s.undo("a")
    lines = path.read_bytes().split(b"\n")
    lines[1] = b"damaged"  # the first answer is set aside: the undone one is now answer 1, not 2
    path.write_bytes(b"\n".join(lines))
    with pytest.warns(StoreRecoveryWarning, match="line 2"):
        with AnswerStore(path) as s:
            assert s.records == [] and [a["undone"] for a in s.all_answers] == [True]


def test_an_undo_record_of_no_answer_is_ignored_with_a_warning(tmp_path):
    path = tmp_path / "a.jsonl"
    with AnswerStore(path, meta={"n": 10}) as s:
        s.append(0, 1, "must")
    with open(path, "ab") as fh:
        fh.write(b'{"undo": {"i": 5, "j": 6, "target": 9}}\n')
    with pytest.warns(StoreRecoveryWarning, match="1 undo record refer to no stored answer"):
        assert _triples(path) == [(0, 1, "must")]


# --- several annotators on one store -------------------------------------------------------------------------


def test_a_jsonl_store_is_single_writer_and_says_so(tmp_path):
    with pytest.raises(
        StoreError, match=r"^shared: answer store .*a.jsonl is JSON lines, which take one writer"
    ):
        AnswerStore(tmp_path / "a.jsonl", shared=True)
    assert list(tmp_path.iterdir()) == []
    first = AnswerStore(tmp_path / "b.jsonl")
    with pytest.raises(StoreLockedError, match="a JSON-lines store takes one writer at a time"):
        AnswerStore(tmp_path / "b.jsonl")
    first.close()


def test_shared_and_single_writer_sessions_exclude_each_other_by_name(tmp_path):
    path = tmp_path / "a.sqlite"
    a = AnswerStore(path, meta={"n": 10}, shared=True)
    b = AnswerStore(path, meta={"n": 10}, shared=True)  # two shared sessions at once: fine
    with pytest.raises(
        StoreLockedError, match="in use by annotators working on it together .shared mode.; join"
    ):
        AnswerStore(path)
    a.close()
    b.close()
    single = AnswerStore(path)
    with pytest.raises(StoreLockedError, match=rf"in use by another process \(pid {os.getpid()}.*--shared"):
        AnswerStore(path, shared=True)
    single.close()
    assert not (tmp_path / "a.sqlite.sessions").exists() and not (tmp_path / "a.sqlite.lock").exists()


def test_a_claimed_question_is_not_handed_to_another_live_session(tmp_path):
    path = tmp_path / "a.sqlite"
    a = AnswerStore(path, meta={"n": 10}, shared=True)
    b = AnswerStore(path, meta={"n": 10}, shared=True)
    try:
        assert a.claim(0, 1, "alice") and not b.claim(1, 0, "bob")  # same pair, either order
        assert b.claim(0, 2, "bob")
        assert [(p["i"], p["j"], p["annotator"], p["mine"]) for p in a.pending()] == [
            (0, 1, "alice", True),
            (0, 2, "bob", False),
        ]
        a.append(0, 1, "must", annotator="alice")  # answering releases the claim ...
        assert not b.claim(0, 1, "bob")  # ... and an answered pair is never claimed again
        assert a.claim(3, 4, "alice") and [p["i"] for p in a.pending() if p["mine"]] == [3]
        update = b.refresh()  # bob's session learns alice's answer
        assert [(r["i"], r["j"], r["annotator"]) for r in update.answers] == [(0, 1, "alice")]
        assert b.refresh().answers == []  # reported once
        a.undo("alice")
        assert [(r["i"], r["j"]) for r in b.refresh().undone] == [(0, 1)]
        assert b.claim(0, 1, "bob")  # undone: the question is open again
    finally:
        a.close()
        b.close()
    with AnswerStore(path) as s:  # a single-writer open drops the stale claims
        assert (
            s.pending() == []
            and sqlite3.connect(path).execute("SELECT COUNT(*) FROM pending").fetchone()[0] == 0
        )


CLAIMER = textwrap.dedent(
    """
    import sys, time
    from jaxclust.active.store import AnswerStore

    store = AnswerStore(sys.argv[1], meta={"n": 10}, shared=True)
    print("claimed" if store.claim(0, 1, "zoe") else "refused", flush=True)
    time.sleep(120)
    """
)


def test_the_claims_of_a_killed_session_are_released_and_a_live_one_keeps_its_claim(tmp_path):
    path = tmp_path / "a.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CLAIMER, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout.readline().strip() == "claimed"
        with AnswerStore(path, meta={"n": 10}, shared=True) as s:
            assert not s.claim(0, 1, "me")  # alive: however long it takes, the question stays its own
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert s.claim(0, 1, "me")  # killed: its claim is released at once
            assert [p["annotator"] for p in s.pending()] == ["me"]
    finally:
        proc.kill()
        proc.wait()
