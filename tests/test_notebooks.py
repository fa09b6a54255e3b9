"""Every notebook in notebooks/ runs top to bottom on CPU (executed with nbclient, cwd = notebooks/), shows
the figures it makes, and prints no progress-bar warning; each is derived from its jupytext source
(``notebooks/<name>.py``, percent format) and in sync with it, and starts with the Colab setup cells.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
COLAB = "https://colab.research.google.com/github/jaxclust/jaxclust/blob/main/notebooks/{}.ipynb"

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


def cells(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells]


def test_every_notebook_has_its_source():
    sources = {p.stem for p in (REPO / "notebooks").glob("*.py")}
    assert len(NOTEBOOKS) >= 6
    assert {p.stem for p in NOTEBOOKS} == sources


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_in_sync_with_its_source(path: Path):
    """The .ipynb holds exactly the cells of its .py source (edit the .py, then ``jupytext --sync`` it)."""
    jupytext = pytest.importorskip("jupytext", reason="jupytext is not installed (the dev extra installs it)")
    nbformat = pytest.importorskip("nbformat")
    source = jupytext.read(path.with_suffix(".py"))
    derived = nbformat.read(path, as_version=4)
    assert cells(derived) == cells(source), (
        f"{path.name} is out of sync with {path.stem}.py: run `jupytext --sync notebooks/{path.stem}.py`"
    )
    assert not [c for c in derived.cells if c.get("outputs")], f"{path.name}: outputs are not committed"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_starts_with_the_colab_setup(path: Path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(path, as_version=4)
    note, install = nb.cells[0], nb.cells[1]
    assert note.cell_type == "markdown" and note.source.startswith("# ")
    assert "GPU" in note.source and COLAB.format(path.stem) in note.source
    assert install.cell_type == "code"
    assert 'find_spec("jaxclust") is None' in install.source and '"pip", "install"' in install.source
    assert not [c for c in nb.cells[2:] if c.cell_type == "code" and "pip" in c.source]


def test_readme_has_a_colab_badge_for_each_notebook():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in NOTEBOOKS if f"]({COLAB.format(p.stem)})" not in readme]
    assert missing == [], "no Open in Colab badge in the README"


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
