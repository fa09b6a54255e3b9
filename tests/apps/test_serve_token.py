"""``jaxclust serve`` on an address other than 127.0.0.1 generates an access token, prints it in the address to
share, and refuses every request without it; ``jaxclust store stats`` reads its store while it runs."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from typer.testing import CliRunner  # noqa: E402

from jaxclust.apps.cli import app  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _server  # noqa: E402


def test_a_server_on_all_addresses_needs_the_token_it_printed(tmp_path):
    _server.write_items(tmp_path, n_per=5)
    proc, url = _server.start(tmp_path, "--host", "0.0.0.0")
    try:
        parts = urlsplit(url)
        token = dict(q.split("=", 1) for q in parts.query.split("&"))["token"]
        assert len(token) >= 20
        local = f"http://127.0.0.1:{parts.port}"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(local + "/api/status")
        assert refused.value.code == 401 and b"access token" in refused.value.read()
        asked = urllib.request.Request(local + "/api/status", headers={"Authorization": f"Bearer {token}"})
        assert urllib.request.urlopen(asked).status == 200
        wrong = urllib.request.Request(local + "/api/status", headers={"Authorization": "Bearer " + "x" * 22})
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(wrong)
        stats = CliRunner().invoke(app, ["store", "stats", str(tmp_path / "answers.sqlite")])
        assert stats.exit_code == 0 and "0 answers in effect" in stats.output  # beside the running server
    finally:
        out = _server.stop(proc)
    assert "Traceback" not in out
