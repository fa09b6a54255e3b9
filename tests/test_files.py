"""Durable writes: the whole new content or the old one, the link kept, nothing left behind on failure."""

from __future__ import annotations

import os
import stat

import pytest

from jaxclust import files


def test_atomic_write_replaces_the_content_and_keeps_the_mode(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"old")
    p.chmod(0o600)
    files.atomic_write(p, b"new content")
    assert p.read_bytes() == b"new content"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]  # no temporary file left


def test_atomic_write_creates_a_missing_file(tmp_path):
    files.atomic_write(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"


def test_atomic_write_through_a_link_rewrites_the_target_and_keeps_the_link(tmp_path):
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"1\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    files.atomic_write(link, b"2\n")
    assert link.is_symlink() and target.read_bytes() == b"2\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "a.txt"
    p.write_bytes(b"old")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        files.atomic_write(p, b"new")
    assert p.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]


def test_append_durably_appends_every_byte(tmp_path):
    p = tmp_path / "log"
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        files.append_durably(fd, b"a\n")
        files.append_durably(fd, b"b" * 100_000 + b"\n")
    finally:
        os.close(fd)
    assert p.read_bytes() == b"a\n" + b"b" * 100_000 + b"\n"
