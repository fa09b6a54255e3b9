"""SENSEVAL-2 lexical-sample instances of *hard*, *interest*, *line*, *serve* (folder ``senseval2_nltk``)."""

from __future__ import annotations

import functools
import os

import numpy as np

from jaxclust.datasets.base import (
    Dataset,
    check_choice,
    dataset_folder,
    encode_labels,
    read_csv_rows,
    read_jsonl,
)

__all__ = ["load_senseval2", "SENSEVAL2_WORDS"]

FOLDER = "senseval2_nltk"
_FILES = ("instances.jsonl", "senses.tsv")
SENSEVAL2_WORDS = {"hard": "hard-a", "interest": "interest-n", "line": "line-n", "serve": "serve-v"}


@functools.lru_cache(maxsize=2)
def _read(folder: str) -> tuple[tuple[dict, ...], tuple[dict, ...]]:
    instances = read_jsonl(
        os.path.join(folder, "instances.jsonl"),
        required=("lexelt", "sense", "text", "id", "tokens", "pos", "head_index"),
    )
    senses = tuple(
        read_csv_rows(
            os.path.join(folder, "senses.tsv"), delimiter="\t", required=("lexelt", "sense", "gloss")
        )
    )
    return instances, senses


def load_senseval2(word: str = "interest", data_dir: str | os.PathLike | None = None) -> Dataset:
    """Sense-tagged contexts of one target word, for clustering word instances by sense.

    Parameters
    ----------
    word : {"hard", "interest", "line", "serve"}
        Target word (``"hard-a"`` style lexelt names are accepted too). Instances: hard 4,333 (3 senses),
        interest 2,368 (6), line 4,146 (6), serve 4,378 (4).
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    Dataset
        ``texts`` = contexts (tokens joined by spaces), ``labels["sense"]``, ``item_names`` = instance ids;
        ``extra``: ``tokens`` (list of token lists), ``pos`` (Penn tags, None where missing), ``head_index``
        (n,) index of the target word in ``tokens``, ``sense_glosses`` (one per sense id), ``lexelt``.
    """
    word = {v: k for k, v in SENSEVAL2_WORDS.items()}.get(word, word)
    check_choice(word, "word", tuple(SENSEVAL2_WORDS))
    lexelt = SENSEVAL2_WORDS[word]
    folder = dataset_folder(FOLDER, _FILES, data_dir)
    instances, senses = _read(str(folder))
    rows = [r for r in instances if r["lexelt"] == lexelt]
    sense_rows = [s for s in senses if s["lexelt"] == lexelt]
    codes, names = encode_labels([r["sense"] for r in rows], [s["sense"] for s in sense_rows])
    return Dataset(
        name=f"senseval2/{word}",
        X=None,
        texts=[r["text"] for r in rows],
        labels={"sense": codes},
        label_names={"sense": names},
        item_names=[r["id"] for r in rows],
        feature_names=None,
        target="sense",
        description=(
            f"SENSEVAL-2 format lexical-sample contexts of {lexelt!r} (1-2 sentences each), one gold sense "
            "per instance. interest: Bruce & Wiebe (1994), LDOCE senses, WSJ; hard/line/serve: Leacock "
            "et al., WordNet-based senses."
        ),
        source="nltk_data senseval.zip (SENSEVAL 2 Corpus: Sense Tagged Text, Ted Pedersen)",
        license="Distributed with permission (no open licence); research/evaluation use only.",
        extra={
            "lexelt": lexelt,
            "tokens": [list(r["tokens"]) for r in rows],
            "pos": [list(r["pos"]) for r in rows],
            "head_index": np.array([r["head_index"] for r in rows], dtype=np.int64),
            "sense_glosses": [s["gloss"] for s in sense_rows],
        },
    )
