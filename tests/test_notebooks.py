"""Every notebook in notebooks/ runs top to bottom on CPU (executed with nbclient, cwd = notebooks/), shows
the figures it makes, and prints no progress-bar warning.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

# a call that makes a new figure: pyplot's constructors, a bare Figure, jaxclust's plotting helpers
FIGURE_CALL = re.compile(r"\b(?:plt\.(?:subplots|figure)|Figure|plot_curves)\(")


def count_figure_calls(nb) -> int:
    """Figure-making calls in the code cells' source (each makes at least one figure when it runs)."""
    return sum(len(FIGURE_CALL.findall(c.source)) for c in nb.cells if c.cell_type == "code")


def outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def count_images(nb) -> int:
    """PNG images in the executed outputs (displayed figures)."""
    return sum("image/png" in o.get("data", {}) for o in outputs(nb))


def test_figure_calls_are_counted():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("fig, ax = plt.subplots()\nplt.figure(figsize=(3, 3))"),
            nbformat.v4.new_markdown_cell("plt.subplots( in prose is not code"),
            nbformat.v4.new_code_cell("fig = Figure()\nsubplots = 3  # not a call"),
        ]
    )
    assert count_figure_calls(nb) == 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    outs = outputs(nb)
    assert not [o for o in outs if o.get("output_type") == "error"]
    # every figure the notebook makes is shown (a notebook that switches to a non-interactive backend, e.g.
    # matplotlib.use("Agg"), or a library call that does, shows none)
    n_figures, n_images = count_figure_calls(nb), count_images(nb)
    assert n_images >= n_figures, f"{path.name}: {n_figures} figures made, {n_images} images shown"
    # tqdm's notebook bars need ipywidgets (the `notebooks` extra); without it tqdm.auto warns on import
    streams = "".join(o.get("text", "") for o in outs if o.get("output_type") == "stream")
    assert "TqdmWarning" not in streams and "IProgress not found" not in streams, streams[:500]
