"""Experiment-grid configs: expansion, run ids, and errors that name the file, the key and the line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxclust.apps.experiment import load_config, parse_config, plan, run_id
from jaxclust.apps.experiment.config import params_hash
from jaxclust.errors import ExperimentConfigError, JaxclustError

FAKE = Path(__file__).resolve().parent / "fake_kinds.py"

GRID = f"""
kind = "{FAKE}:fast"
description = "a 2 x 3 grid, one extra run, one excluded"

[fixed]
y = 5

[grid]
x = [1, 2]
seed = [0, 1, 2]

[[include]]
x = 9
seed = 0
y = 0

[[exclude]]
x = 2
seed = 1

[quick]
grid = {{ seed = [0] }}
include = []
"""


def test_expansion_is_the_product_plus_includes_minus_excludes():
    runs = parse_config(GRID, "grid.toml").runs()
    got = [(r.params["x"], r.params["seed"], r.params["y"]) for r in runs]
    assert got == [(1, 0, 5), (1, 1, 5), (1, 2, 5), (2, 0, 5), (2, 2, 5), (9, 0, 0)]
    assert all(r.kind == f"{FAKE}:fast" for r in runs)


def test_quick_overrides_replace_the_axes_and_lists_they_name():
    runs = parse_config(GRID, "grid.toml").runs(quick=True)
    assert [(r.params["x"], r.params["seed"]) for r in runs] == [(1, 0), (2, 0)]
    # the quick runs are runs of the full grid too: same parameters, same ids
    full = {r.id for r in parse_config(GRID, "grid.toml").runs()}
    assert {r.id for r in runs} <= full


def test_quick_fixed_value_turns_an_axis_into_a_constant():
    cfg = parse_config('kind = "k:f"\n[grid]\na = [1, 2]\nb = [3, 4]\n[quick.fixed]\na = 7\n')
    assert [r.params for r in cfg.runs(quick=True)] == [{"a": 7, "b": 3}, {"a": 7, "b": 4}]


def test_ids_are_readable_distinct_and_name_what_varies():
    runs = parse_config(GRID, "grid.toml").runs()
    ids = [r.id for r in runs]
    assert len(set(ids)) == len(ids)
    assert ids[0].startswith("x-1_seed-0-") and "y-" not in ids[0]  # fixed values are hashed, not spelled out
    assert ids[-1].startswith("x-9_seed-0_y-0-")  # an include's own keys are spelled out
    assert all(len(r.hash) == 10 and int(r.hash, 16) >= 0 for r in runs)


def test_ids_depend_on_every_parameter_and_on_the_kind():
    base = run_id("k", {"a": 1, "b": [1, 2]}, ["a"])
    assert run_id("k", {"a": 1, "b": [1, 2]}, ["a"]) == base
    assert run_id("k", {"b": [1, 2], "a": 1}, ["a"]) == base  # key order does not matter
    assert run_id("k", {"a": 1, "b": [1, 3]}, ["a"]) != base  # a fixed parameter changed: a new run
    assert run_id("k2", {"a": 1, "b": [1, 2]}, ["a"]) != base
    assert run_id("k", {"a": 1.0, "b": [1, 2]}, ["a"]).endswith(base[-10:])  # numbers by value
    assert params_hash("k", {"a": 0.1}) != params_hash("k", {"a": 0.10000001})


def test_ids_are_stable_across_processes_and_releases():
    # a hash that changed between versions would orphan every finished run of every grid: pin one
    assert run_id("active_dpmm", {"set": "bio-top", "seed": 0, "n_chains": 4}, ["set", "seed"]) == (
        "set-bio-top_seed-0-" + params_hash("active_dpmm", {"n_chains": 4, "seed": 0, "set": "bio-top"})
    )
    assert params_hash("active_dpmm", {"set": "bio-top", "seed": 0}) == "a519f87270"
    code = (
        "from jaxclust.apps.experiment import parse_config; import sys; "
        "print('\\n'.join(r.id for r in parse_config(sys.stdin.read(), 'grid.toml').runs()))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], input=GRID, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [r.id for r in parse_config(GRID, "grid.toml").runs()]


def test_long_slugs_are_cut_but_ids_stay_distinct():
    a = run_id("k", {"name": "x" * 200, "i": 1})
    b = run_id("k", {"name": "x" * 200, "i": 2})
    assert a != b and len(a) <= 80 + 11
    assert run_id("k", {"path": "a/b c"}).startswith("path-a_b_c-")


def test_duplicate_include_is_one_run():
    cfg = parse_config('kind = "k:f"\n[grid]\na = [1, 2]\n[[include]]\na = 1\n')
    assert [r.params for r in cfg.runs()] == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('kind = "k:f"\n[grid]\nseed = 3\n', r"grid\.seed \(line 3\): a grid axis must be a list"),
        ('kind = "k:f"\n\n[grid]\nseed = []\n', r"grid\.seed \(line 4\): an empty list gives no runs"),
        ('kind = "k:f"\nseeds = [1]\n', r"seeds \(line 2\): unknown key"),
        ('description = "no kind"\n', r"kind: missing"),
        ("kind = 3\n", r"kind \(line 1\): expected a non-empty string"),
        ('kind = "k:f"\n[fixed]\na = 1\n[grid]\na = [1, 2]\n', r"grid\.a \(line 5\): is also in \[fixed\]"),
        ('kind = "k:f"\n[grid]\na = [1]\n[[exclude]]\nb = 2\n', r"exclude\.b \(line 5\): entry 1 names"),
        ('kind = "k:f"\ngrid = 3\n', r"grid \(line 2\): expected a table"),
        ('kind = "k:f"\n[quick]\nfixd = { a = 1 }\n', r"quick\.fixd \(line 3\): unknown key"),
        (
            'kind = "k:f"\n[quick]\ngrid = { a = 1 }\n',
            r"quick\.grid\.a \(line 3\): a grid axis must be a list",
        ),
        ('kind = "k:f"\ninclude = [1, 2]\n', r"include \(line 2\): expected an array of tables"),
        ('kind = "k:f"\n\nseed = tru\n', r"not valid TOML: Invalid value \(at line 3, column 8\)"),
    ],
)
def test_bad_config_names_the_key_and_line(text, expected):
    with pytest.raises(ExperimentConfigError, match=expected) as info:
        parse_config(text, "bad.toml")
    assert str(info.value).startswith("bad.toml")
    assert isinstance(info.value, JaxclustError) and isinstance(info.value, ValueError)


def test_unknown_parameter_of_the_kind_is_named_with_its_line(tmp_path):
    cfg = tmp_path / "typo.toml"
    cfg.write_text(f'kind = "{FAKE}:fast"\n\n[fixed]\ny = 1\n\n[grid]\nx = [1]\nsede = [0, 1]\n')
    with pytest.raises(
        ExperimentConfigError, match=r"typo\.toml: grid\.sede \(line 8\): not a parameter of kind"
    ):
        plan(cfg)
    cfg.write_text(f'kind = "{FAKE}:fast"\n[grid]\nseed = [0]\n')
    with pytest.raises(ExperimentConfigError, match=r"lacks the required parameter 'x'"):
        plan(cfg)


def test_unknown_kind_and_missing_function_are_named(tmp_path):
    cfg = tmp_path / "k.toml"
    cfg.write_text('kind = "no_such_kind"\n')
    with pytest.raises(
        ExperimentConfigError, match=r"k\.toml: kind \(line 1\): unknown experiment kind 'no_such_kind'"
    ):
        plan(cfg)
    cfg.write_text(f'kind = "{FAKE}:nope"\n')
    with pytest.raises(ExperimentConfigError, match=r"has no function 'nope'"):
        plan(cfg)
    cfg.write_text('kind = "missing_file.py:run"\n')  # relative to the config's folder
    with pytest.raises(ExperimentConfigError, match=rf"{tmp_path / 'missing_file.py'} not found"):
        plan(cfg)


def test_load_config_file_errors(tmp_path):
    with pytest.raises(ExperimentConfigError, match="no such config file"):
        load_config(tmp_path / "absent.toml")
    with pytest.raises(ExperimentConfigError, match="is a folder"):
        load_config(tmp_path)
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'kind = "k:f"\ndescription = "caf\xe9"\n')
    with pytest.raises(ExperimentConfigError, match=r"latin1\.toml: line 2 is not valid UTF-8"):
        load_config(bad)


LINKED = """
kind = "k:f"
[fixed]
batch_size = 10
[grid]
dataset = ["a", "b"]
[linked]
curve = [
  { strategy = "batch", seed = 0 },
  { strategy = "random", seed = 1, batch_size = 100 },
]
[quick.linked]
curve = [{ strategy = "batch", seed = 0 }]
"""


def test_linked_axis_values_vary_together_and_override_fixed_defaults():
    runs = parse_config(LINKED, "l.toml").runs()
    got = [
        (r.params["dataset"], r.params["strategy"], r.params["seed"], r.params["batch_size"]) for r in runs
    ]
    assert got == [
        ("a", "batch", 0, 10),
        ("a", "random", 1, 100),
        ("b", "batch", 0, 10),
        ("b", "random", 1, 100),
    ]
    assert "curve" not in runs[0].params  # the axis name is not a parameter
    assert runs[1].id.startswith("dataset-a_strategy-random_seed-1_batch_size-100-")
    quick = parse_config(LINKED, "l.toml").runs(quick=True)
    assert [(r.params["dataset"], r.params["strategy"]) for r in quick] == [("a", "batch"), ("b", "batch")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'kind = "k:f"\n[grid]\na = [1]\n[linked]\nc = [{ a = 2 }]\n',
            r"linked\.a \(line 5\): is also a grid axis",
        ),
        (
            'kind = "k:f"\n[linked]\nc = [{ a = 2 }]\nd = [\n  { b = 1 },\n  { a = 3 },\n]\n',
            r"linked\.a \(line 3\): is in two linked axes \('c' and 'd'\)",
        ),
        (
            'kind = "k:f"\n[linked]\nc = [1, 2]\n',
            r"linked\.c \(line 3\): a linked axis must be a non-empty list",
        ),
        ('kind = "k:f"\n[linked]\nc = []\n', r"linked\.c \(line 3\): a linked axis must be a non-empty list"),
    ],
)
def test_bad_linked_axes_are_named(text, expected):
    with pytest.raises(ExperimentConfigError, match=expected):
        parse_config(text, "bad.toml")


def test_unknown_parameter_in_a_linked_table_is_named_with_its_line(tmp_path):
    cfg = tmp_path / "typo.toml"
    cfg.write_text(
        f'kind = "{FAKE}:fast"\n[fixed]\nx = 1\n[linked]\nc = [\n  {{ y = 1 }},\n  {{ y = 2, sed = 3 }},\n]\n'
    )
    with pytest.raises(ExperimentConfigError, match=r"typo\.toml: linked\.sed \(line 7\): not a parameter"):
        plan(cfg)
