"""The package surface: lazy top-level names resolve to the classes their modules define; the CLI starts."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import jaxclust
from jaxclust.cli import app


@pytest.mark.parametrize("name", sorted(jaxclust._LAZY))
def test_lazy_names_resolve_to_their_module(name):
    module = importlib.import_module(jaxclust._LAZY[name])
    assert getattr(jaxclust, name) is getattr(module, name)


def test_unknown_attribute_raises():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        jaxclust.nope  # noqa: B018


def test_import_is_light():
    # importing the package must not import JAX (fast CLI start, no device initialisation at import)
    code = "import sys, jaxclust; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_info_reports_version_and_backend():
    result = CliRunner().invoke(app, ["info"])
    assert result.exit_code == 0, result.output
    assert f"jaxclust {jaxclust.__version__}" in result.output
    assert "backend cpu" in result.output
