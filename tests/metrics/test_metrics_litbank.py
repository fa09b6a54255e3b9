"""Coreference metrics and the CoNLL writer on LitBank gold mentions (data test).

Gold scores 1; the baselines of docs/algorithms/metrics.md (one cluster per document: MUC F1 83.6,
CEAFe 1.0; all singletons: B³ ~44); a CoNLL write/read round trip of real documents."""

from __future__ import annotations

import io
import json

import pytest

from jaxclust.metrics import ConllDocument, corpus_scores, parse_conll, write_conll


def _litbank_test(data_dir):
    path = data_dir / "coref" / "litbank" / "test.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found")
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _gold(doc):
    entities: dict[int, set] = {}
    for m in doc["mentions"]:
        entities.setdefault(m["entity"], set()).add(
            (m["start"], m["end"] - 1)
        )  # end is exclusive in the JSON
    return list(entities.values())


@pytest.mark.data
def test_litbank_gold_and_documented_baselines(data_dir):
    docs = _litbank_test(data_dir)
    gold = [_gold(d) for d in docs]
    perfect = corpus_scores(gold, gold)
    assert all(
        perfect[m] == pytest.approx((1.0, 1.0, 1.0))
        for m in ("muc", "b_cubed", "ceaf_m", "ceaf_e", "lea", "blanc")
    )
    one = corpus_scores(gold, [[set().union(*g)] for g in gold])
    assert one["muc"][2] == pytest.approx(0.836, abs=5e-4)  # MUC alone rewards over-merging (see the docs)
    assert one["ceaf_e"][2] == pytest.approx(0.010, abs=5e-4)
    singles = corpus_scores(gold, [[{m} for m in set().union(*g)] for g in gold])
    assert singles["muc"] == (0.0, 0.0, 0.0)
    assert singles["b_cubed"][1] == 1.0 and 0.44 <= singles["b_cubed"][2] <= 0.71


@pytest.mark.data
def test_litbank_conll_round_trip(data_dir):
    docs = _litbank_test(data_dir)
    written = [
        ConllDocument.from_clusters(
            f"({d['doc_id']}); part 000",
            _gold(d),
            sentence_lengths=[e - s for s, e in d["sentences"]],
            words=d["tokens"],
        )
        for d in docs
    ]
    buf = io.StringIO()
    write_conll(written, buf)
    back = parse_conll(buf.getvalue())
    assert [b.name for b in back] == [w.name for w in written]
    for w, b in zip(written, back, strict=True):
        assert b.n_tokens == w.n_tokens and b.sentence_starts == w.sentence_starts
        assert sorted(b.clusters) == sorted(w.clusters)
        assert [r[3] for r in b.rows] == [r[3] for r in w.rows]  # words survive
