"""LitBank and GUM documents: per-split counts equal the READMEs; mentions, sentences, entities cohere."""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from jaxclust import datasets as D

# README tables: docs, tokens, mentions, entities, singleton entities, max mentions in a doc
LITBANK = {
    "train": (80, 169456, 23218, 6344, 4635, 501),
    "dev": (10, 20438, 3053, 776, 563, 393),
    "test": (10, 20638, 2832, 807, 565, 350),
    "all": (100, 210532, 29103, 7927, 5763, 501),
}
LITBANK_TYPES = {
    "train": (12527, 7754, 2937),
    "dev": (1687, 1025, 341),
    "test": (1602, 958, 272),
    "all": (15816, 9737, 3550),
}
GUM = {
    "train": (177, 177410, 49649, 25758, 18750, 565),
    "dev": (30, 28119, 7897, 3940, 2838, 362),
    "test": (30, 28397, 7927, 4319, 3225, 351),
    "test2": (26, 17799, 5680, 3081, 2247, 532),
}
GUM_PRON_HEADS = {"train": 12885, "dev": 2169, "test": 1808, "test2": 1013}


def _counts(docs):
    n_tok = sum(len(d.words) for d in docs)
    n_ment = sum(d.n_mentions for d in docs)
    sizes = [c for d in docs for c in np.bincount(d.entities)]
    return (
        len(docs),
        n_tok,
        n_ment,
        len(sizes),
        sum(1 for s in sizes if s == 1),
        max(d.n_mentions for d in docs),
    )


def _check_coherent(doc):
    words = doc.words
    starts = np.cumsum([0] + [len(s) for s in doc.tokens])
    prev = (-1, 0)
    first_seen = []
    for m in doc.mentions:
        assert 0 <= m.start < m.end <= len(words)
        assert m.text == " ".join(words[m.start : m.end])
        assert starts[m.sentence] <= m.start < starts[m.sentence + 1]
        assert (m.start, -m.end) >= prev  # document order: start asc, end desc
        prev = (m.start, -m.end)
        if m.entity not in first_seen:
            assert m.entity == len(first_seen)  # entities numbered by first mention
            first_seen.append(m.entity)
    clusters = doc.clusters
    assert sum(len(c) for c in clusters) == doc.n_mentions
    assert [tuple(s) for s in doc.spans[doc.entities == 0]] == clusters[0]


@pytest.fixture(scope="module")
def litbank(data_dir):
    return {s: D.load_litbank(s, data_dir=data_dir) for s in LITBANK}


@pytest.mark.parametrize("split", sorted(LITBANK))
def test_litbank_counts(litbank, split):
    docs = litbank[split]
    assert _counts(docs) == LITBANK[split]
    types = collections.Counter(m.mention_type for d in docs for m in d.mentions)
    assert (types["PRON"], types["NOM"], types["PROP"]) == LITBANK_TYPES[split]
    for d in docs:
        _check_coherent(d)
        assert all(m.head is None and m.upos is None for m in d.mentions)


def test_litbank_entity_types_and_relations(litbank):
    docs = litbank["all"]
    etypes = collections.Counter(m.entity_type for d in docs for m in d.mentions)
    assert etypes == {"PER": 24180, "FAC": 2330, "LOC": 1289, "GPE": 948, "VEH": 207, "ORG": 149}
    assert sum(len(d.extra["relations"]) for d in docs) == 692
    d = docs[0]
    for kind, i, j in d.extra["relations"]:
        assert kind in ("COP", "APPOS") and 0 <= i < d.n_mentions and 0 <= j < d.n_mentions


def test_litbank_folds(litbank, data_dir):
    folds = json.loads((data_dir / "coref" / "litbank" / "folds.json").read_text())
    for split in ("train", "dev", "test"):
        assert [d.doc_id for d in litbank[split]] == folds["0"][split]
    all_ids = {d.doc_id for d in litbank["all"]}
    for k in (3, 9):
        parts = {s: D.load_litbank(s, fold=k, data_dir=data_dir) for s in ("train", "dev", "test")}
        ids = {s: [d.doc_id for d in docs] for s, docs in parts.items()}
        assert ids == {s: folds[str(k)][s] for s in ids}
        assert sorted(ids["train"] + ids["dev"] + ids["test"]) == sorted(all_ids)
        assert [len(v) for v in ids.values()] == [80, 10, 10]


@pytest.fixture(scope="module")
def gum(data_dir):
    return {s: D.load_gum(s, data_dir=data_dir) for s in GUM}


@pytest.mark.parametrize("split", sorted(GUM))
def test_gum_counts(gum, split):
    docs = gum[split]
    assert _counts(docs) == GUM[split]
    assert sum(m.upos == "PRON" for d in docs for m in d.mentions) == GUM_PRON_HEADS[split]
    for d in docs:
        _check_coherent(d)
        assert not d.doc_id.startswith("GUM_reddit")
        words = d.words
        upos, feats = d.extra["upos"], d.extra["feats"]
        for m in d.mentions:
            # head lies in the span, its own head outside it; head fields copy the token layers
            assert m.start <= m.head < m.end
            h = d.extra["heads"][m.head]
            assert not (m.start <= h < m.end)
            assert m.head_word == words[m.head] and m.upos == upos[m.head]
            assert "|".join(f"{k}={v}" for k, v in m.feats) == (feats[m.head] or "")


def test_gum_train_types_and_genres(gum):
    docs = gum["train"]
    etypes = collections.Counter(m.entity_type for d in docs for m in d.mentions)
    assert etypes["abstract"] == 15901 and etypes["person"] == 14459 and etypes["plant"] == 435
    links = collections.Counter(m.link for d in docs for m in d.mentions)
    assert links == {
        "sgl": 18250,
        "coref": 17927,
        "ana": 11421,
        "disc": 660,
        "appos": 655,
        "pred": 489,
        "cata": 247,
    }
    assert {len(set(d.genre for d in gum[s])) for s in ("dev", "test")} == {15}  # 2 docs per genre, no reddit
    assert sum(d.extra["speakers"] is not None for s in GUM for d in gum[s]) == 98
    nc = [d for d in docs if d.genre == "fiction"]
    assert nc and all("NC" in d.license for d in nc)


# README sanity baselines (coval, micro-averaged, singletons kept): MUC, B3, CEAFe F1 and CoNLL, in %
BASELINES = {
    ("litbank", "singletons"): (0.0, 44.35, 36.96, 27.10),
    ("litbank", "one"): (83.56, 21.41, 0.96, 35.31),
    ("gum", "singletons"): (0.0, 70.54, 62.08, 44.21),
    ("gum", "one"): (62.72, 6.03, 0.29, 23.01),
}


@pytest.mark.parametrize("corpus, system", sorted(BASELINES))
def test_test_split_baselines_equal_readme(litbank, gum, corpus, system):
    from jaxclust.metrics import corpus_scores

    docs = (litbank if corpus == "litbank" else gum)["test"]
    keys = [d.to_conll().entities() for d in docs]
    make = (lambda m: np.arange(m)) if system == "singletons" else (lambda m: np.zeros(m, dtype=int))
    responses = [d.to_conll(make(d.n_mentions)).entities() for d in docs]
    s = corpus_scores(keys, responses)
    got = (s["muc"][2], s["b_cubed"][2], s["ceaf_e"][2], s["conll_f1"])
    np.testing.assert_allclose(np.array(got) * 100, BASELINES[corpus, system], atol=0.006)


def test_to_conll_round_trips_through_the_conll_writer(litbank, gum):
    import io

    from jaxclust.errors import InvalidInputError
    from jaxclust.metrics.conll import read_conll, write_conll

    docs = litbank["dev"][:3] + gum["dev"][:3]
    buf = io.StringIO()
    write_conll([d.to_conll() for d in docs], buf)
    buf.seek(0)
    back = read_conll(buf)
    for d, r in zip(docs, back, strict=True):
        assert r.name == d.doc_id and r.n_tokens == len(d.words)
        assert sorted(map(sorted, r.clusters)) == sorted(sorted((a, b - 1) for a, b in c) for c in d.clusters)
        assert [r.sentence_of(m.start) for m in d.mentions] == [m.sentence for m in d.mentions]
    with pytest.raises(InvalidInputError, match="labels"):
        docs[0].to_conll(np.zeros(docs[0].n_mentions + 1, dtype=int))
