"""The package surface: lazy top-level names resolve to the classes their modules define; the CLI starts."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import jaxclust
from jaxclust.apps.cli import app


@pytest.mark.parametrize("name", sorted(jaxclust._LAZY))
def test_lazy_names_resolve_to_their_module(name):
    module = importlib.import_module(jaxclust._LAZY[name])
    assert getattr(jaxclust, name) is getattr(module, name)


def test_unknown_attribute_raises():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        jaxclust.nope  # noqa: B018


@pytest.mark.parametrize("module", ["jaxclust", "jaxclust.apps.cli", "jaxclust.apps.notebook"])
def test_import_is_light(module):
    # importing the package, the command line or the notebook annotator loads neither JAX nor scikit-learn
    # (fast start, no device initialisation at import): they load when a command or a fit needs them
    code = f"import sys, {module}; print(sorted(m for m in ('jax', 'sklearn', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_version_matches_the_installed_distribution():
    assert jaxclust.__version__ == importlib.metadata.version("jaxclust")


def test_cli_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"jaxclust {jaxclust.__version__}\n"


# the numerical stack the README and `jaxclust info` name
STACK = ["jax", "jaxlib", "numpyro", "optax", "equinox", "numpy", "scipy", "scikit-learn", "matplotlib"]


def test_cli_info_prints_stack_versions_and_devices():
    import jax

    result = CliRunner().invoke(app, ["info"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"jaxclust {jaxclust.__version__} (Python ")
    printed = dict(line.split() for line in lines[1 : 1 + len(STACK)])
    assert printed == {name: importlib.metadata.version(name) for name in STACK}
    devices = jax.devices()
    assert lines[1 + len(STACK)] == f"backend {jax.default_backend()}; {len(devices)} device(s):"
    shown = lines[2 + len(STACK) :]
    assert [line.split()[0] for line in shown] == [f"{d.platform}:{d.id}" for d in devices]
