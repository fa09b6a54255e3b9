"""A store is one file whatever the names that reach it: a second writer through a symbolic or hard link, or after
the ``.lock`` file was deleted, gets a named error (an SQLite file with two hard links is refused: two journals);
a file cut short or a dangling link is said as such."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxclust.active import AnswerStore
from jaxclust.errors import StoreError, StoreLockedError, StoreMismatchError

REPO = Path(__file__).resolve().parents[2]

OPEN_AND_REPORT = textwrap.dedent(
    """
    import sys
    from jaxclust.active.store import AnswerStore
    from jaxclust.errors import StoreError, StoreLockedError, StoreMismatchError

    try:
        AnswerStore(sys.argv[1]).close()
    except StoreLockedError as exc:
        print("locked:", exc)
    except StoreError as exc:
        print("refused:", exc)
    else:
        print("opened")
    """
)


def _other_process(path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", OPEN_AND_REPORT, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _links(tmp_path: Path, suffix: str) -> tuple[Path, Path, Path]:
    store = tmp_path / "data" / f"a{suffix}"
    store.parent.mkdir()
    AnswerStore(store).close()  # it exists
    (tmp_path / "other").mkdir()
    soft, hard = tmp_path / "other" / f"soft{suffix}", tmp_path / "other" / f"hard{suffix}"
    os.symlink(store, soft)
    os.link(store, hard)
    return store, soft, hard


def test_a_jsonl_store_takes_one_writer_whatever_the_name(tmp_path):
    store, soft, hard = _links(tmp_path, ".jsonl")
    with AnswerStore(store) as first:
        first.append(0, 1, "must")
        for name in (soft, hard):
            with pytest.raises(StoreLockedError, match="in use by another process|under another name"):
                AnswerStore(name)  # the same process
            assert _other_process(name).startswith("locked:"), name  # another process
        os.remove(store.with_name(store.name + ".lock"))  # deleted mid-session: the file itself stays locked
        assert _other_process(store).startswith("locked:")
        first.append(1, 2, "cannot")
    assert _other_process(hard) == "opened"  # released on close
    with AnswerStore(soft) as again:
        assert [(r["i"], r["j"]) for r in again.records] == [(0, 1), (1, 2)]


def test_an_sqlite_store_opened_through_a_symbolic_link_is_the_same_store(tmp_path):
    store, soft, hard = _links(tmp_path, ".sqlite")
    hard.unlink()  # one name for the file (see the next test)
    with AnswerStore(store) as first:
        first.append(0, 1, "must")
        assert _other_process(soft).startswith("locked:")
        with pytest.raises(StoreLockedError):
            AnswerStore(soft)
        os.remove(store.with_name(store.name + ".lock"))  # deleted mid-session: the file itself stays held
        assert _other_process(soft).startswith("locked:")
        with pytest.raises(StoreLockedError, match="under another name .* or with its .lock file removed"):
            AnswerStore(soft)
        first.append(1, 2, "cannot")  # the first writer goes on
    # beside a live shared session a single writer through a link is refused, and the claims stay
    with AnswerStore(store, shared=True) as shared:
        assert shared.claim(2, 3, annotator="alice")
        with pytest.raises(StoreLockedError, match="shared mode"):
            AnswerStore(soft)
        assert [(c["i"], c["j"]) for c in shared.pending()] == [(2, 3)]
        assert [(r["i"], r["j"]) for r in shared.records] == [(0, 1), (1, 2)]
    assert not (tmp_path / "other" / "soft.sqlite-wal").exists()  # SQLite's files sit beside the file itself


def test_an_sqlite_store_with_two_names_is_refused_under_either(tmp_path):
    """SQLite keeps the journal beside the name it opened, so a database with two hard links is two journals."""
    store, _, hard = _links(tmp_path, ".sqlite")
    for name in (store, hard):
        for readonly in (False, True):
            with pytest.raises(StoreError, match=r"the file has 2 names \(hard links\).*Nothing was opened"):
                AnswerStore(name, readonly=readonly)
    os.remove(hard)
    with AnswerStore(store) as first:  # a link made while a session runs: refused in another process
        first.append(0, 1, "must")
        os.link(store, tmp_path / "later.sqlite")
        out = _other_process(tmp_path / "later.sqlite")
        assert out.startswith("refused:") and "has 2 names" in out, out
        first.append(1, 2, "cannot")
    os.remove(tmp_path / "later.sqlite")
    with AnswerStore(store) as again:
        assert len(again.records) == 2


def test_a_jsonl_store_cut_short_mid_session_stops_the_session(tmp_path):
    path = tmp_path / "a.jsonl"
    with AnswerStore(path, meta={"n": 10}) as store:
        store.append(0, 1, "must")
        store.append(1, 2, "cannot")
        store.undo()
        store.append(1, 3, "must", annotator="bob")
        with open(path, "r+b") as f:  # another program truncates the file in place
            f.truncate(10)
        with pytest.raises(
            StoreError, match=r"a.jsonl: was cut to 10 bytes while this session had it open"
        ) as e:
            store.append(2, 3, "must")
    # the answers in effect are in a new store beside it, which opens as one (same meta), nothing else is lost
    (saved,) = tmp_path.glob("a.saved-*.jsonl")
    assert f"The 2 answers in effect that this session held are saved in {saved}" in str(e.value)
    with AnswerStore(saved, meta={"n": 10}) as again:
        assert [(r["i"], r["j"], r["answer"], r["annotator"]) for r in again.records] == [
            (0, 1, "must", None),
            (1, 3, "must", "bob"),
        ]
    with pytest.raises(StoreMismatchError):
        AnswerStore(saved, meta={"n": 11})


def test_a_dangling_link_is_named(tmp_path):
    link = tmp_path / "a.jsonl"
    os.symlink(tmp_path / "gone.jsonl", link)
    with pytest.raises(StoreError, match=r"a.jsonl: is a link to .*gone.jsonl, which does not exist"):
        AnswerStore(link)


WAL_CHILD = textwrap.dedent(
    """
    import os, sys
    from jaxclust.active.store import AnswerStore
    from jaxclust.errors import StoreError

    store = AnswerStore(sys.argv[1], shared=True)
    store.append(0, 1, "must", annotator="alice")
    os.remove(sys.argv[1] + "-wal")  # another program removes the write-ahead log
    try:
        store.append(1, 2, "cannot", annotator="alice")
    except StoreError as exc:
        print("refused:", exc, flush=True)
    os._exit(0)  # as kill -9: no clean close
    """
)


def test_a_removed_write_ahead_log_loses_no_acknowledged_answer(tmp_path):
    path = tmp_path / "a.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", WAL_CHILD, str(path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused:") and "write-ahead log a.sqlite-wal was removed" in out.stdout
    assert "copied into the database file" in out.stdout
    with AnswerStore(path, shared=True) as store:
        assert [(r["i"], r["j"], r["answer"]) for r in store.records] == [(0, 1, "must")]


def test_an_sqlite_store_cut_short_mid_session_is_said_to_be(tmp_path):
    path = tmp_path / "a.sqlite"
    with AnswerStore(path, meta={"n": 10}) as store:
        store.append(0, 1, "must")
        with open(path, "r+b") as f:  # another program truncates it
            f.truncate(0)
        with pytest.raises(
            StoreError, match=r"a.sqlite: was truncated or overwritten by another program while"
        ):
            store.append(1, 2, "cannot")
