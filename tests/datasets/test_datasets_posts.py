"""20 Newsgroups, NPS Chat and BBC News: counts equal the READMEs; header/quote/signature removal equals
scikit-learn's fetch_20newsgroups(remove=...)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from sklearn.datasets import _twenty_newsgroups as sk20

from jaxclust import datasets as D
from jaxclust.datasets.posts import strip_footer, strip_header, strip_quotes

GROUP_SIZES = {
    "alt.atheism": 799,
    "comp.graphics": 973,
    "comp.os.ms-windows.misc": 985,
    "comp.sys.ibm.pc.hardware": 982,
    "comp.sys.mac.hardware": 963,
    "comp.windows.x": 988,
    "misc.forsale": 975,
    "rec.autos": 990,
    "rec.motorcycles": 996,
    "rec.sport.baseball": 994,
    "rec.sport.hockey": 999,
    "sci.crypt": 991,
    "sci.electronics": 984,
    "sci.med": 990,
    "sci.space": 987,
    "soc.religion.christian": 997,
    "talk.politics.guns": 910,
    "talk.politics.mideast": 940,
    "talk.politics.misc": 775,
    "talk.religion.misc": 628,
}


@pytest.fixture(scope="module")
def raw(data_dir):
    return D.load_newsgroups(strip_headers=False, data_dir=data_dir)


def test_newsgroups_counts(raw, data_dir):
    assert len(raw) == 18846
    sizes = np.bincount(raw.labels["topic"])
    assert dict(zip(raw.label_names["topic"], sizes.tolist(), strict=True)) == GROUP_SIZES
    assert raw.label_names["topic"] == sorted(GROUP_SIZES)  # alphabetical, as scikit-learn
    assert collections.Counter(raw.extra["split"]) == {"train": 11314, "test": 7532}
    assert len(raw.label_names["author"]) == 8604
    test = D.load_newsgroups(subset="test", data_dir=data_dir)
    assert len(test) == 7532 and set(test.extra["split"]) == {"test"}
    assert raw.texts[0].startswith("From: ")


def test_stripping_equals_sklearn(raw, data_dir):
    stripped = D.load_newsgroups(data_dir=data_dir)
    expected = [
        sk20.strip_newsgroup_quoting(sk20.strip_newsgroup_footer(sk20.strip_newsgroup_header(t)))
        for t in raw.texts
    ]
    assert stripped.texts == expected
    np.testing.assert_array_equal(stripped.y, raw.y)
    only_headers = D.load_newsgroups(remove=("headers",), data_dir=data_dir)
    assert only_headers.texts[:500] == [sk20.strip_newsgroup_header(t) for t in raw.texts[:500]]


@pytest.mark.parametrize(
    "text",
    [
        "a\nb\n\n-- \nsig\n",
        "no blank line at all",
        "x\n----\n",
        "\n\nbody",
        "l1\n> quoted\n| also\nJo writes:\nl2",
        "In article <1@x> y@z says:\nkeep\n",
        "line\n\n\n  \n",
    ],
)
def test_strip_helpers_equal_sklearn_on_edge_cases(text):
    assert strip_header(text) == sk20.strip_newsgroup_header(text)
    assert strip_footer(text) == sk20.strip_newsgroup_footer(text)
    assert strip_quotes(text) == sk20.strip_newsgroup_quoting(text)


def test_newsgroups_by_author(data_dir):
    # README: 59 authors with >= 20 posts (2,000 posts); 261 with >= 10 (4,673 posts)
    ds = D.load_newsgroups(labels="author", data_dir=data_dir)
    assert len(ds) == 2000 and ds.n_classes == 59 and ds.target == "author"
    assert min(np.bincount(ds.y)) >= 20
    ds10 = D.load_newsgroups(labels="author", min_posts=10, strip_headers=False, data_dir=data_dir)
    assert len(ds10) == 4673 and ds10.n_classes == 261
    # with headers kept, the From: line (which names the label) is still removed, other headers stay
    assert not any(
        line.startswith("From:") for t in ds10.texts for line in t.partition("\n\n")[0].split("\n")
    )
    assert all(t.startswith("Subject:") or "\nSubject:" in t.partition("\n\n")[0] for t in ds10.texts[:50])


def test_nps_chat_counts(data_dir):
    ds = D.load_nps_chat(data_dir=data_dir)
    assert len(ds) == 10567
    assert len(ds.label_names["user"]) == 1377
    acts = dict(zip(ds.label_names["dialog_act"], np.bincount(ds.labels["dialog_act"]).tolist(), strict=True))
    assert acts == {
        "Statement": 3185,
        "System": 2632,
        "Greet": 1363,
        "Emotion": 1106,
        "ynQuestion": 550,
        "whQuestion": 533,
        "Accept": 233,
        "Bye": 195,
        "Emphasis": 190,
        "Continuer": 168,
        "Reject": 159,
        "yAnswer": 108,
        "nAnswer": 72,
        "Clarify": 38,
        "Other": 35,
    }
    assert len(set(ds.extra["session"])) == 15
    assert len(set(ds.item_names)) == len(ds)
    # texts with embedded double quotes survive the TSV quoting
    assert any('"itch"' in t for t in ds.texts)
    big = D.load_nps_chat(label="dialog_act", min_posts=50, exclude_system=True, data_dir=data_dir)
    assert len(big.label_names["user"]) <= 43 and "System" not in big.label_names["dialog_act"]
    assert D.load_nps_chat(min_posts=50, data_dir=data_dir).n_classes == 43


def test_bbc_counts_and_duplicates(data_dir):
    ds = D.load_bbc_news(data_dir=data_dir)
    assert len(ds) == 2225
    sizes = dict(zip(ds.label_names["topic"], np.bincount(ds.y).tolist(), strict=True))
    assert sizes == {"business": 510, "entertainment": 386, "politics": 417, "sport": 511, "tech": 401}
    lengths = [len(t.split()) for t in ds.texts]
    assert min(lengths) == 89 and max(lengths) == 4432 and np.median(lengths) == 332
    dedup = D.load_bbc_news(deduplicate=True, data_dir=data_dir)
    assert len(dedup) == 2225 - 98 and len(set(dedup.texts)) == len(dedup)
    removed = collections.Counter(ds.label_names["topic"][c] for c in ds.y) - collections.Counter(
        dedup.label_names["topic"][c] for c in dedup.y
    )
    assert removed == {"tech": 54, "entertainment": 17, "politics": 14, "business": 7, "sport": 6}
    assert all(t.startswith(title) for t, title in zip(ds.texts, ds.extra["title"], strict=True))
