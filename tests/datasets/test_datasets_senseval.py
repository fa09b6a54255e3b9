"""SENSEVAL-2 lexical samples: instance and sense counts equal the README table."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jaxclust import datasets as D

README_COUNTS = {
    "hard": {"HARD1": 3455, "HARD2": 502, "HARD3": 376},
    "interest": {
        "interest_1": 361,
        "interest_2": 11,
        "interest_3": 66,
        "interest_4": 178,
        "interest_5": 500,
        "interest_6": 1252,
    },
    "line": {"product": 2217, "phone": 429, "text": 404, "division": 374, "cord": 373, "formation": 349},
    "serve": {"SERVE10": 1814, "SERVE12": 1272, "SERVE2": 853, "SERVE6": 439},
}
FORMS = {
    "hard": r"hard(er|est)?",
    "interest": r"interests?",
    "line": r"lines?|lined",
    "serve": r"serv(e|ed|es|ing)",
}


@pytest.mark.parametrize("word", sorted(README_COUNTS))
def test_sense_counts(data_dir, word):
    ds = D.load_senseval2(word, data_dir=data_dir)
    counts = np.bincount(ds.y, minlength=len(ds.label_names["sense"]))
    assert dict(zip(ds.label_names["sense"], counts.tolist(), strict=True)) == README_COUNTS[word]
    assert len(ds) == sum(README_COUNTS[word].values())
    assert len(ds.extra["sense_glosses"]) == len(ds.label_names["sense"])
    assert len(set(ds.item_names)) == len(ds)
    # the target word sits at head_index; texts are the tokens joined by spaces
    form = re.compile(FORMS[word], re.IGNORECASE)
    for text, toks, h in zip(ds.texts, ds.extra["tokens"], ds.extra["head_index"], strict=True):
        assert form.fullmatch(toks[h])
        assert text == " ".join(toks)


def test_lexelt_names_are_accepted(data_dir):
    a = D.load_senseval2("serve-v", data_dir=data_dir)
    assert a.name == "senseval2/serve" and a.extra["lexelt"] == "serve-v"
    assert len(a) == 4378
