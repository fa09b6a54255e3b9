"""CoNLL-2012 coreference column: hand-written snippet (nested, concatenated, '|'-separated brackets, several
documents), write/read round trips, bracket errors, and scoring files."""

from __future__ import annotations

import io

import numpy as np
import pytest

from jaxclust.errors import InvalidInputError
from jaxclust.metrics import coref as M
from jaxclust.metrics.conll import (
    ConllDocument,
    format_coref_cells,
    parse_conll,
    read_conll,
    score_conll,
    write_conll,
)

SNIPPET = """\
#begin document (bc/cctv/00/cctv_0001); part 000
bc/cctv/00/cctv_0001   0   0   The     DT   (TOP(S(NP*   -   -   -   Speaker#1   *   (1(2
bc/cctv/00/cctv_0001   0   1   big     JJ   *            -   -   -   Speaker#1   *   -
bc/cctv/00/cctv_0001   0   2   dog     NN   *)           -   -   -   Speaker#1   *   2)
bc/cctv/00/cctv_0001   0   3   's      POS  *            -   -   -   Speaker#1   *   1)
bc/cctv/00/cctv_0001   0   4   owner   NN   *            -   -   -   Speaker#1   *   (3)|(4

bc/cctv/00/cctv_0001   0   0   He      PRP  (TOP(S(NP*)  -   -   -   Speaker#1   *   4)|(1)
bc/cctv/00/cctv_0001   0   1   saw     VBD  (VP*         -   -   -   Speaker#1   *   -
bc/cctv/00/cctv_0001   0   2   it      PRP  *)))         -   -   -   Speaker#1   *   (2)(12+3)

#end document
#begin document (bc/cctv/00/cctv_0001); part 001
x 1 0 A - - - - - - * (7
x 1 1 B - - - - - - * (7)
x 1 2 C - - - - - - * 7)
#end document
"""


def test_hand_written_snippet():
    docs = parse_conll(SNIPPET)
    assert [d.name for d in docs] == ["(bc/cctv/00/cctv_0001); part 000", "(bc/cctv/00/cctv_0001); part 001"]
    d0, d1 = docs
    assert d0.n_tokens == 8 and d0.sentence_starts == (0, 5)
    assert d0.entity_ids == ["1", "2", "3", "4"]
    # "(1(2" opens two mentions; "(3)|(4" is a one-token mention plus an opening; "(12+3)" is discarded
    assert d0.clusters == [[(0, 3), (5, 5)], [(0, 2), (7, 7)], [(4, 4)], [(4, 5)]]
    assert d0.sentence_of(5) == 1 and d0.sentence_of(4) == 0
    assert d0.mentions == [(0, 2), (0, 3), (4, 4), (4, 5), (5, 5), (7, 7)]
    # nested mentions of the same entity: the closing pairs with the latest opening
    assert d1.clusters == [[(0, 2), (1, 1)]]


def test_reader_matches_reference_pairing_for_same_entity_nesting():
    text = "#begin document d\nt (5(5\nt -\nt 5)\nt 5)\n#end document\n"
    assert parse_conll(text)[0].clusters == [[(0, 2), (0, 3)]]


def _random_document(rng, name):
    lengths = rng.integers(1, 8, rng.integers(1, 5)).tolist()
    n = sum(lengths)
    clusters = []
    for _ in range(int(rng.integers(0, 5))):
        spans = []
        for _ in range(int(rng.integers(1, 4))):
            s = int(rng.integers(0, n))
            t = int(min(n - 1, s + rng.integers(0, 3)))
            # keep mentions of one entity disjoint or nested (what the format can encode)
            if all(t < a or s > b or (a <= s and t <= b) or (s <= a and b <= t) for a, b in spans):
                spans.append((s, t))
        clusters.append(spans)
    return ConllDocument.from_clusters(name, clusters, sentence_lengths=lengths)


def test_write_then_read_preserves_clusters():
    rng = np.random.default_rng(0)
    docs = [_random_document(rng, f"(doc{i}); part 000") for i in range(30)]
    buf = io.StringIO()
    write_conll(docs, buf)
    back = parse_conll(buf.getvalue())
    assert [d.name for d in back] == [d.name for d in docs]
    for d, b in zip(docs, back, strict=True):
        assert b.n_tokens == d.n_tokens and b.sentence_starts == d.sentence_starts
        # same partition of spans (entity order/ids may differ only if an entity were empty: they are dropped)
        assert sorted(map(sorted, b.clusters)) == sorted(map(sorted, d.clusters))


def test_round_trip_of_a_read_file_keeps_columns(tmp_path):
    docs = parse_conll(SNIPPET)
    path = tmp_path / "out.conll"
    write_conll(docs, path)
    again = read_conll(path)
    assert [d.clusters for d in again] == [d.clusters for d in docs]
    assert again[0].rows[1][:11] == docs[0].rows[1][:11]  # non-coreference columns kept
    # second round trip is byte-identical
    path2 = tmp_path / "out2.conll"
    write_conll(again, path2)
    assert path.read_text() == path2.read_text()


def test_with_clusters_writes_a_response_and_scores_it(tmp_path):
    key_docs = parse_conll(SNIPPET)
    response = [key_docs[0].with_clusters([[(0, 3), (5, 5), (7, 7)], [(4, 4)]]), key_docs[1]]
    write_conll(response, tmp_path / "resp.conll")
    (tmp_path / "key.conll").write_text(SNIPPET)
    out = score_conll(tmp_path / "key.conll", tmp_path / "resp.conll")
    want = M.corpus_scores([d.entities() for d in key_docs], [d.entities() for d in response])
    assert out == want
    # MUC by hand: correct links 1 (doc 0: (0,3)-(5,5)) + 1 (doc 1); key links 2 + 1; response links 2 + 1
    assert out["muc"] == pytest.approx(M.prf(1 + 1, 2 + 1, 1 + 1, 2 + 1))
    # a key document absent from the response counts as an empty response
    partial = score_conll(key_docs, response[:1])
    assert partial == M.corpus_scores([d.entities() for d in key_docs], [response[0].entities(), []])


def test_cells_for_nested_and_concatenated_mentions():
    cells = format_coref_cells([[(0, 3), (5, 5)], [(0, 2), (2, 2)]], 6)
    assert cells == ["(0|(1", "-", "(1)|1)", "0)", "-", "(0)"]
    assert parse_conll("#begin document d\n" + "".join(f"t {c}\n" for c in cells) + "#end document\n")[
        0
    ].clusters == [
        [(0, 3), (5, 5)],
        [(0, 2), (2, 2)],
    ]


def test_bracket_errors_name_the_line():
    with pytest.raises(InvalidInputError, match=r"<text>:3: .*entity 4 closes"):
        parse_conll("#begin document d\nt -\nt 4)\n#end document\n")
    with pytest.raises(InvalidInputError, match=r"<text>:2: .*entity 4 opened at token 0 never closes"):
        parse_conll("#begin document d\nt (4\nt -\n#end document\n")
    with pytest.raises(InvalidInputError, match="no '#end document'"):
        parse_conll("#begin document d\nt (4)\n")
    with pytest.raises(InvalidInputError, match="overlap without nesting"):
        format_coref_cells([[(0, 2), (2, 4)]], 5)
    with pytest.raises(InvalidInputError, match="outside tokens"):
        ConllDocument.from_clusters("d", [[(0, 9)]], n_tokens=3)
    with pytest.raises(InvalidInputError, match="no such file"):
        read_conll("/nonexistent/file.conll")
