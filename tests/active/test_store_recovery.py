"""The answer store keeps every intact record, sets damaged ones aside, never shrinks intact content, names every
failure with a jaxclust error, and survives writers killed in the middle of their writes.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from jaxclust.active.store import AnswerStore, check_store_path
from jaxclust.errors import (
    InvalidInputError,
    JaxclustError,
    StoreError,
    StoreLockedError,
    StoreRecoveryWarning,
)

REPO = Path(__file__).resolve().parents[2]
ANSWERS = [(0, 1, "must"), (2, 3, "cannot"), (1, 4, "unknown"), (3, 5, "must"), (0, 6, "cannot")]


def _make(path: Path, answers=ANSWERS, n: int = 10) -> None:
    with AnswerStore(path, meta={"n": n}) as s:
        for i, j, a in answers:
            s.append(i, j, a, round=1)


def _triples(path: Path) -> list[tuple[int, int, str]]:
    with AnswerStore(path) as s:
        return [(r["i"], r["j"], r["answer"]) for r in s.records]


def _side(path: Path) -> list[dict]:
    side = path.with_name(path.name + ".corrupt")
    return [json.loads(x) for x in side.read_text().splitlines()] if side.exists() else []


# --- damaged JSON lines --------------------------------------------------------------------------------------


def test_a_damaged_middle_line_keeps_every_intact_answer_and_is_set_aside(tmp_path):
    path = tmp_path / "answers.jsonl"
    _make(path)
    lines = path.read_bytes().split(b"\n")  # line 1 is the meta record, answers are lines 2..6
    damaged = b'{"i": 2, "j": 3, "answer": "cann\x00ot", "kept": tr'
    lines[2] = damaged  # file line 3 (the second answer)
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    with pytest.warns(StoreRecoveryWarning, match=r"line 3 \(not valid JSON"):
        got = _triples(path)
    assert got == [a for k, a in enumerate(ANSWERS) if k != 1]  # all four intact answers, in order
    side = _side(path)
    assert len(side) == 1 and side[0]["line"] == 3 and base64.b64decode(side[0]["bytes_base64"]) == damaged
    # the file lost exactly the damaged line: every intact byte is still there, in order
    assert path.read_bytes() == before.replace(damaged + b"\n", b"")
    with AnswerStore(path, meta={"n": 10}) as s:  # repaired once: a clean open, and appends go on cleanly
        s.append(8, 9, "must")
    assert _triples(path)[-1] == (8, 9, "must") and len(_side(path)) == 1


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"not json at all", "not valid JSON"),
        (b'{"i": 1, "j": 2, "answer": "\xff\xfe", "kept": true, "round": 1}', "not valid UTF-8"),
        (b"[1, 2, 3]", "a JSON list"),
        (b'{"i": 1, "j": 2, "kept": true, "round": 1}', "missing field 'answer'"),
        (
            b'{"i": 1, "j": 2, "answer": "must", "kept": true, "round": 1, "who": "x"}',
            "unexpected field 'who'",
        ),
        (b'{"i": 1, "j": 2, "answer": "yes", "kept": true, "round": 1}', "answer is 'yes'"),
        (b'{"i": 4, "j": 4, "answer": "must", "kept": true, "round": 1}', "i and j are both 4"),
        (b'{"i": 1, "j": 99, "answer": "must", "kept": true, "round": 1}', "item 99 is out of range for 10"),
        (b'{"i": 1.5, "j": 2, "answer": "must", "kept": true, "round": 1}', "i is 1.5"),
        (b'{"i": 1, "j": 2, "answer": "must", "kept": "yes", "round": 1}', "kept is 'yes'"),
        (b'{"meta": 3}', "malformed meta"),
        (b'{"fit": {"n_fit": 0}}', "fit record without"),
    ],
)
def test_every_kind_of_damaged_record_is_named_and_set_aside(tmp_path, line, reason):
    path = tmp_path / "a.jsonl"
    _make(path)
    with open(path, "ab") as fh:
        fh.write(line + b"\n")
    _make_more = (7, 8, "must")
    with open(path, "ab") as fh:  # an intact answer after the damaged one
        fh.write(json.dumps({"i": 7, "j": 8, "answer": "must", "kept": True, "round": 2}).encode() + b"\n")
    with pytest.warns(StoreRecoveryWarning, match=rf"line 7 \({reason}"):
        assert _triples(path) == [*ANSWERS, _make_more]
    assert base64.b64decode(_side(path)[0]["bytes_base64"]) == line


def test_several_damaged_lines_are_all_named(tmp_path):
    path = tmp_path / "a.jsonl"
    _make(path)
    lines = path.read_bytes().split(b"\n")
    lines[1], lines[4] = b"garbage one", b"garbage two"
    path.write_bytes(b"\n".join(lines))
    with pytest.warns(StoreRecoveryWarning, match=r"2 damaged lines: line 2 .*; line 5 ") as rec:
        got = _triples(path)
    assert len(rec) == 1 and "kept 3 intact answers" in str(rec[0].message)
    assert got == [ANSWERS[1], ANSWERS[2], ANSWERS[4]]
    assert [e["line"] for e in _side(path)] == [2, 5]


def test_a_torn_last_line_is_repaired_and_its_bytes_kept(tmp_path):
    path = tmp_path / "a.jsonl"
    _make(path)
    intact = path.read_bytes()
    torn = b'{"answer": "must", "i": 7, "j'
    with open(path, "ab") as fh:
        fh.write(torn)
    with pytest.warns(StoreRecoveryWarning, match="line 7 .cut short by a crash"):
        assert _triples(path) == ANSWERS
    assert path.read_bytes() == intact  # exactly the intact content
    assert base64.b64decode(_side(path)[0]["bytes_base64"]) == torn


def test_a_complete_last_record_without_its_newline_is_kept(tmp_path):
    path = tmp_path / "a.jsonl"
    _make(path)
    rec = json.dumps({"answer": "must", "i": 7, "j": 8, "kept": True, "round": 2}).encode()
    with open(path, "ab") as fh:
        fh.write(rec)  # the crash came between the record and its newline
    with AnswerStore(path) as s:
        assert s.records[-1] == {
            "i": 7,
            "j": 8,
            "answer": "must",
            "kept": True,
            "round": 2,
            "annotator": None,
        }
        s.append(8, 9, "cannot")
    assert path.read_bytes().endswith(
        rec
        + b"\n"
        + json.dumps({"answer": "cannot", "i": 8, "j": 9, "kept": True, "round": 0}, sort_keys=True).encode()
        + b"\n"
    )
    assert not path.with_name("a.jsonl.corrupt").exists()


def test_a_crash_between_setting_aside_and_rewriting_does_not_duplicate_the_side_file(tmp_path, monkeypatch):
    path = tmp_path / "a.jsonl"
    _make(path)
    lines = path.read_bytes().split(b"\n")
    lines[3] = b"broken"
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()

    def boom(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(StoreError, match="could not be repaired .No space left on device"):
        AnswerStore(path)
    assert path.read_bytes() == before  # atomic: the store is untouched when the rewrite fails
    assert not list(tmp_path.glob(".a.jsonl.*.tmp"))  # no temporary file left behind
    monkeypatch.undo()
    with pytest.warns(StoreRecoveryWarning, match="line 4"):
        assert len(_triples(path)) == 4
    assert len(_side(path)) == 1  # set aside once, though two opens saw the damage


def test_a_file_that_is_not_a_store_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "items.csv"
    content = b"word,f1,f2\na,1,2\nb,3,4\n"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=r"items.csv: does not look like a jaxclust answer store \(line 1"):
        AnswerStore(path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.csv"]  # no side file, no lock file


# --- paths and SQLite -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".sqlite", ".jsonl"])
def test_a_folder_or_a_missing_folder_is_a_named_error_and_creates_nothing(tmp_path, suffix):
    folder = tmp_path / f"store{suffix}"
    folder.mkdir()
    with pytest.raises(StoreError, match=rf"store{suffix}: is a folder; pass a file path"):
        AnswerStore(folder)
    missing = tmp_path / "nope" / f"a{suffix}"
    with pytest.raises(StoreError, match="the folder .*nope does not exist"):
        AnswerStore(missing)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"store{suffix}"]
    assert list(folder.iterdir()) == []


def test_a_corrupt_sqlite_file_is_a_named_error_and_is_left_untouched(tmp_path):
    path = tmp_path / "answers.sqlite"
    content = bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8))
    path.write_bytes(content)
    with pytest.raises(
        StoreError, match=r"answers.sqlite: is not an SQLite database .*pass a new path"
    ) as info:
        AnswerStore(path)
    assert isinstance(info.value, JaxclustError) and not isinstance(info.value, sqlite3.Error)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.sqlite"]


def test_a_foreign_sqlite_database_is_refused_and_not_modified(tmp_path):
    path = tmp_path / "mine.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(
        StoreError, match=r"mine.db: is an SQLite database but not a jaxclust answer store .tables: users"
    ):
        AnswerStore(path)
    assert path.read_bytes() == before


def test_a_damaged_sqlite_row_is_skipped_with_a_warning_and_kept_in_the_database(tmp_path):
    path = tmp_path / "a.sqlite"
    _make(path)
    con = sqlite3.connect(path)
    con.execute("INSERT INTO answers (i, j, answer, kept, round) VALUES (1, 2, 'perhaps', 1, 1)")
    con.execute("INSERT INTO answers (i, j, answer, kept, round) VALUES (7, 8, 'must', 1, 1)")
    con.commit()
    con.close()
    with pytest.warns(StoreRecoveryWarning, match=r"answers row 6 \(answer is 'perhaps'"):
        assert _triples(path) == [*ANSWERS, (7, 8, "must")]
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 7


@pytest.mark.parametrize("suffix", [".sqlite", ".jsonl"])
def test_a_read_only_store_is_a_named_error(tmp_path, suffix, monkeypatch):
    path = tmp_path / f"a{suffix}"
    _make(path)
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if (Path(p) == path and mode == os.W_OK) else real(p, mode)
    )
    with pytest.raises(StoreError, match=rf"a{suffix}: is read-only; make it writable \(chmod u\+w"):
        AnswerStore(path)
    with pytest.raises(StoreError, match="read-only"):
        check_store_path(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only files")
def test_a_chmod_read_only_sqlite_store_is_a_named_error(tmp_path):
    path = tmp_path / "a.sqlite"
    _make(path)
    path.chmod(0o444)
    with pytest.raises(StoreError, match="read-only"):
        AnswerStore(path)


def test_an_sqlite_write_error_is_named(tmp_path):
    path = tmp_path / "a.sqlite"
    store = AnswerStore(path)
    store._backend.conn.close()
    store._backend.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # writes now fail inside SQLite
    with pytest.raises(StoreError, match=r"a.sqlite: is read-only"):
        store.append(0, 1, "must")
    store.close()


def test_a_second_open_in_the_same_process_is_refused_while_the_first_is_open(tmp_path):
    path = tmp_path / "a.jsonl"
    first = AnswerStore(path)
    with pytest.raises(
        StoreLockedError, match=rf"a.jsonl is in use by another process \(pid {os.getpid()}"
    ) as info:
        AnswerStore(path)
    assert info.value.path == str(path) and info.value.holder["pid"] == os.getpid()
    first.close()
    AnswerStore(path).close()  # released on close


def test_bad_records_given_to_append_raise_named_errors(tmp_path):
    with AnswerStore(tmp_path / "a.jsonl") as s:
        with pytest.raises(InvalidInputError, match="answer"):
            s.append(0, 1, "yes")
        with pytest.raises(InvalidInputError, match="i, j"):
            s.append(3, 3, "must")
        with pytest.raises(InvalidInputError, match="i: expected an int >= 0"):
            s.append(-1, 3, "must")
        assert s.records == []


# --- writers killed mid-write ---------------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from jaxclust.active.store import AnswerStore

    store = AnswerStore(sys.argv[1], meta={"n": 100000})
    k = len(store.records)
    print(k, flush=True)
    while True:  # record k is a function of k: whoever reads the store can check every one
        store.append(k, k + 1 + k % 7, ("must", "cannot", "unknown")[k % 3], round=k // 5)
        k += 1
    """
)


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
def test_writers_killed_at_random_points_lose_and_repeat_nothing(tmp_path, suffix):
    path = tmp_path / f"a{suffix}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rng = np.random.default_rng(5)
    t0, kills = time.monotonic(), 0
    while kills < 25:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env
        )
        start = int(proc.stdout.readline())
        time.sleep(rng.uniform(0.0, 0.05))  # nearly all of a writer's time is spent writing and fsyncing
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        with AnswerStore(path) as s:
            recs = s.records
        assert len(recs) >= start  # nothing that was there before this writer is gone
        want = [
            {
                "i": k,
                "j": k + 1 + k % 7,
                "answer": ("must", "cannot", "unknown")[k % 3],
                "kept": True,
                "round": k // 5,
                "annotator": None,
            }
            for k in range(len(recs))
        ]
        assert recs == want  # in order, none lost, none twice
    assert len(recs) > 25 and time.monotonic() - t0 < 60


@pytest.mark.parametrize("suffix", [".jsonl", ".sqlite"])
@pytest.mark.parametrize("change", ["replaced", "deleted"])
def test_a_store_replaced_or_deleted_under_a_session_stops_it_with_an_error_that_says_so(
    tmp_path, suffix, change
):
    import os

    from jaxclust.active import AnswerStore
    from jaxclust.errors import StoreError

    path = tmp_path / f"answers{suffix}"
    with AnswerStore(path, meta={"n": 5}) as store:
        store.append(0, 1, "must")
        if change == "replaced":
            other = tmp_path / f"other{suffix}"
            with AnswerStore(other, meta={"n": 5}):
                pass
            os.replace(other, path)
        else:
            path.unlink()
        with pytest.raises(
            StoreError, match=rf"^answer store .*: was {change}.* while this session had it open"
        ):
            store.append(1, 2, "cannot")


def test_a_store_opened_through_a_symlink_is_repaired_in_place_and_keeps_its_link(tmp_path):
    import os

    from jaxclust.active import AnswerStore

    real = tmp_path / "real.jsonl"
    with AnswerStore(real, meta={"n": 5}) as store:
        store.append(0, 1, "must")
    with open(real, "ab") as fh:
        fh.write(b"{damaged\n")
    link = tmp_path / "link.jsonl"
    os.symlink(real, link)
    with pytest.warns(Warning), AnswerStore(link, meta={"n": 5}) as store:
        store.append(2, 3, "cannot")
    assert link.is_symlink() and os.path.realpath(link) == str(real)
    with AnswerStore(real, meta={"n": 5}) as store:
        assert [(r["i"], r["j"]) for r in store.records] == [(0, 1), (2, 3)]
