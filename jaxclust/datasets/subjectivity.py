"""Pang & Lee (2004) subjectivity data set v1.0: 5,000 subjective + 5,000 objective movie sentences."""

from __future__ import annotations

import functools
import os

import numpy as np

from jaxclust.datasets.base import Dataset, dataset_folder, read_csv_rows

__all__ = ["load_subjectivity"]

FOLDER = "pang_lee_subjectivity_v1"
_FILES = ("sentences.tsv",)


@functools.lru_cache(maxsize=2)
def _read(path: str) -> tuple[dict, ...]:
    return tuple(read_csv_rows(path, delimiter="\t", required=("id", "label", "text")))


def load_subjectivity(data_dir: str | os.PathLike | None = None) -> Dataset:
    """Subjective (Rotten Tomatoes snippets) vs objective (IMDb plot sentences) sentences.

    Labels are automatic (by source), not per-sentence judgements. ``labels["subjectivity"]``: 0 objective,
    1 subjective; texts are lower-cased and tokenized (>= 10 tokens); ``item_names`` are the ids
    ``"0"``..``"9999"``.

    Parameters
    ----------
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).
    """
    folder = dataset_folder(FOLDER, _FILES, data_dir)
    rows = _read(str(folder / _FILES[0]))
    y = np.array([int(r["label"]) for r in rows], dtype=np.int64)
    return Dataset(
        name="subjectivity",
        X=None,
        texts=[r["text"].strip() for r in rows],
        labels={"subjectivity": y},
        label_names={"subjectivity": ["objective", "subjective"]},
        item_names=[r["id"] for r in rows],
        feature_names=None,
        target="subjectivity",
        description=(
            "Subjectivity dataset v1.0 (Pang & Lee 2004): 5,000 subjective sentences (review snippets) and "
            "5,000 objective sentences (plot summaries); labels by source, not human judgement."
        ),
        source="Pang & Lee (2004), ACL; via nltk_data subjectivity.zip",
        license="CC BY 4.0 (subjectivity dataset v1.0 by Bo Pang and Lillian Lee)",
    )
