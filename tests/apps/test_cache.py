"""The applications keep compiled programs on disk by default; the flag, the variable and a bad folder."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner


def _in_fresh_process(code: str, env: dict) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


CODE = (
    "import jax; from jaxclust.apps.cache import use_compilation_cache as u; "
    "print(u({flag})); print(jax.config.jax_compilation_cache_dir)"
)


def test_on_by_default_in_the_folder_the_user_set(tmp_path):
    env = {"JAXCLUST_NO_COMPILATION_CACHE": "", "JAXCLUST_CACHE_DIR": str(tmp_path / "xla")}
    got, config = _in_fresh_process(CODE.format(flag="True"), env).splitlines()
    assert got == config == str(tmp_path / "xla") and (tmp_path / "xla").is_dir()


@pytest.mark.parametrize(("flag", "variable"), [("False", ""), ("True", "1")])
def test_off_with_the_flag_or_the_variable(tmp_path, flag, variable):
    env = {"JAXCLUST_NO_COMPILATION_CACHE": variable, "JAXCLUST_CACHE_DIR": str(tmp_path / "xla")}
    got, config = _in_fresh_process(CODE.format(flag=flag), env).splitlines()
    assert got == config == "None" and not (tmp_path / "xla").exists()


def test_a_folder_that_cannot_be_used_is_a_warning_not_a_failure(tmp_path):
    (tmp_path / "file").write_text("x")
    env = {"JAXCLUST_NO_COMPILATION_CACHE": "", "JAXCLUST_CACHE_DIR": str(tmp_path / "file")}
    code = "import warnings; warnings.simplefilter('error'); " + CODE.format(flag="True")
    with pytest.raises(AssertionError, match="compilation cache off: path: .* is not a directory"):
        _in_fresh_process(code, env)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["demo", "--quick"], True),
        (["demo", "--quick", "--no-compilation-cache"], False),
        (["annotate", "items.csv"], True),
        (["annotate", "items.csv", "--no-compilation-cache"], False),
        (["experiment", "run", "c.toml", "--out", "o"], True),
        (["experiment", "run", "c.toml", "--out", "o", "--no-compilation-cache"], False),
    ],
)
def test_every_command_that_fits_asks_for_the_cache(monkeypatch, args, flag):
    from jaxclust.apps import cli_active
    from jaxclust.apps.cli import app
    from jaxclust.apps.experiment import cli as experiment_cli

    asked = []

    def stop(enabled=True):
        asked.append(enabled)
        raise KeyboardInterrupt  # nothing more to run

    monkeypatch.setattr(cli_active, "use_compilation_cache", stop)
    monkeypatch.setattr(experiment_cli, "use_compilation_cache", stop)
    monkeypatch.setattr(cli_active, "check_demo_options", lambda *a, **k: None)
    CliRunner().invoke(app, args)
    assert asked == [flag]
