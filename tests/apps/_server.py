"""Data and artifacts for the tests that start ``jaxclust serve`` as a real process (browser, load, kill -9)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from jaxclust.apps.serve_load import start_server, stop_server

REPO = Path(__file__).resolve().parents[2]
EVIL = "<script>alert('x')</script>"
# a small sampler: the first fit (which also compiles) is done in seconds
SMALL = ("--context-column", "context", "--n-chains", "2", "--n-burnin", "20", "--n-samples", "5")


def artifacts() -> Path:
    """Where the tests leave what a person may want to look at (the screenshot, the load figures)."""
    out = Path(os.environ.get("JAXCLUST_TEST_ARTIFACTS", REPO / "test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_items(folder: Path, n_per: int = 30, seed: int = 0) -> np.ndarray:
    """Four 2-D blobs as ``items.csv`` (``name,context,f1,f2``; every context holds a script tag, which the
    page must show as text); returns the gold labels."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0], [6.0, 6.0]])
    y = np.repeat(np.arange(4), n_per)
    X = centres[y] + rng.normal(size=(len(y), 2))
    with open(folder / "items.csv", "w", encoding="utf-8") as f:
        f.write("name,context,f1,f2\n")
        for k, (a, b) in enumerate(X):
            f.write(f'item{k},"{EVIL} item {k}",{a:.4f},{b:.4f}\n')
    return y


def start(folder: Path, *args: str):
    """The server on ``folder/items.csv`` with the store ``folder/answers.sqlite``."""
    return start_server(folder / "items.csv", folder / "answers.sqlite", *SMALL, *args)


stop = stop_server
