"""Plotting never touches the matplotlib backend: functions return a Figure (or draw into given axes) and
scripts save it.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from jaxclust.apps.demo import METRIC_LABELS, plot_curves

ROOT = Path(__file__).resolve().parents[1]
BACKEND_SWITCH = re.compile(r"\bmatplotlib\.use\(|\bswitch_backend\(|\buse\(\s*['\"]agg['\"]", re.IGNORECASE)


def _runs():
    def run(name, seed, vals):
        hist = [
            {"n_queries": q, "v_beta": v, "homogeneity": v / 2} for q, v in zip((0, 5, 10), vals, strict=True)
        ]
        return {"name": name, "seed": seed, "history": hist}

    return [
        run("active", 0, (0.5, 0.7, 0.9)),
        run("random", 1, (0.5, 0.6, 0.6)),
        run("random", 2, (0.5, 0.4, 0.8)),
    ]


def test_no_backend_switch_in_package_scripts_or_notebook_builders():
    files = [
        *sorted((ROOT / "jaxclust").rglob("*.py")),
        *sorted((ROOT / "experiments").glob("*.py")),
        *sorted((ROOT / "benchmarks").glob("*.py")),
        *sorted((ROOT / "notebooks").glob("*.py")),
        *sorted((ROOT / "notebooks").glob("*.ipynb")),
    ]
    assert len(files) > 20
    offenders = [
        str(f.relative_to(ROOT)) for f in files if BACKEND_SWITCH.search(f.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_plot_curves_returns_a_figure_and_leaves_the_backend_alone(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("plot_curves changed the matplotlib backend")

    monkeypatch.setattr(matplotlib, "use", refuse)
    monkeypatch.setattr(plt, "switch_backend", refuse)
    open_before = plt.get_fignums()
    fig = plot_curves(_runs(), metrics=("v_beta", "homogeneity"), title="t")
    assert isinstance(fig, Figure)
    assert (
        plt.get_fignums() == open_before
    )  # not registered with pyplot: nothing to close, nothing shown twice
    ax_v, ax_h = fig.axes
    assert ax_v.get_ylabel() == METRIC_LABELS["v_beta"] and ax_h.get_ylabel() == METRIC_LABELS["homogeneity"]
    lines = {line.get_label(): line for line in ax_v.get_lines()}
    assert set(lines) == {"active", "random (mean of 2, band: range)"}
    np.testing.assert_allclose(
        lines["random (mean of 2, band: range)"].get_ydata(), [0.5, 0.5, 0.7]
    )  # averaged
    np.testing.assert_allclose(lines["active"].get_xdata(), [0, 5, 10])


def test_plot_curves_draws_into_given_axes_and_saves(tmp_path):
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert plot_curves(_runs(), metrics=("v_beta", "homogeneity"), axes=axes) is fig
    assert [len(ax.get_lines()) for ax in axes] == [2, 2]
    fig.savefig(tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="1 axes for 2 metrics"):
        plot_curves(_runs(), metrics=("v_beta", "homogeneity"), axes=[axes[0]])
