"""Reading a session's items (texts in .txt, CSV and JSON lines; numbers in CSV and .npy) with errors naming the
file and line, and the features saved with the store: the same features on every resume, refused on changed
texts, recomputed only when they come out the same.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from jaxclust.active import AnswerStore
from jaxclust.active.learner import data_fingerprint
from jaxclust.apps.features import features_path, session_features, standardise
from jaxclust.apps.items import items_from_array, items_from_texts, read_items
from jaxclust.errors import DatasetNotFoundError, InvalidInputError, StoreError, StoreMismatchError

TEXTS = [
    "the striker scored a late goal for the team",
    "the coach praised the team after the match",
    "bake the bread in a hot oven for an hour",
    "simmer the garlic and onion in butter",
    "heavy rain and strong wind are forecast",
    "a sunny day with a light breeze",
]


# --- reading items -----------------------------------------------------------------------------------------


def test_a_txt_file_has_one_text_per_line_and_blank_lines_are_skipped(tmp_path):
    (tmp_path / "t.txt").write_text(TEXTS[0] + "\n\n   \n" + TEXTS[1] + "\r\n" + TEXTS[2] + "\n", newline="")
    items = read_items(tmp_path / "t.txt")
    assert items.kind == "texts" and items.texts == TEXTS[:3]
    assert items.names == ["line 1", "line 4", "line 5"]  # where to find each text in the file


def test_a_csv_text_column_and_a_jsonl_text_field(tmp_path):
    (tmp_path / "t.csv").write_text('id,body,label\na7,"hello, world",x\nb2,second text,y\n')
    items = read_items(tmp_path / "t.csv", text_column="body", name_column="id")
    assert (items.kind, items.texts, items.names) == ("texts", ["hello, world", "second text"], ["a7", "b2"])
    assert read_items(tmp_path / "t.csv", text_column="body").names == ["row 2", "row 3"]
    lines = [{"text": "first one", "id": 1}, {"text": "second one", "id": 2}]
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    items = read_items(tmp_path / "t.jsonl", name_column="id")
    assert items.texts == ["first one", "second one"] and items.names == ["1", "2"]
    (tmp_path / "u.jsonl").write_text('{"body": "a b"}\n{"body": "c d"}\n')
    assert read_items(tmp_path / "u.jsonl", text_column="body").texts == ["a b", "c d"]


def test_a_npy_array_is_items_of_numbers(tmp_path):
    np.save(tmp_path / "e.npy", np.arange(12.0).reshape(4, 3))
    items = read_items(tmp_path / "e.npy")
    assert items.kind == "numbers" and items.X.shape == (4, 3) and items.names[3] == "item 3"


BAD = [
    # a gold label column is never clustered as a feature without being asked
    (
        "g.csv",
        b"name,a,b,label\nx,1,2,0\ny,2,3,1\n",
        {},
        r"g.csv: column 'label' looks like gold labels, which would be clustered as a feature: "
        r"pass ignore_columns label to leave it out",
    ),
    ("g.csv", b"name,a,b,Class\nx,1,2,0\ny,2,3,1\n", {}, r"column 'Class' looks like gold labels"),
    # a text column that is neither shown nor clustered: the fix (ignore_columns) is named
    (
        "g.csv",
        b"name,a,b,note\nx,1,2,foo\ny,2,3,bar\n",
        {},
        r"g.csv: line 2, column 'note': 'foo' is not a number \(pass text_column .* "
        r"ignore_columns for a column that is neither, such as a gold label",
    ),
    (
        "g.csv",
        b"name,a,b\nx,1,2\ny,,3\n",
        {},
        r"g.csv: line 3, column 'a': the cell is empty \(a feature column needs a number in every row; "
        r"ignore_columns a leaves the column out\)",
    ),
    ("t.txt", b"only one line\n", {}, r"t.txt: needs at least 2 non-blank lines"),
    ("t.txt", b"caf\xe9\nok\n", {}, r"t.txt: line 1 is not valid UTF-8"),
    ("t.txt", b"a\nb\n", {"text_column": "x"}, r"text_column: .*t.txt is a text file with one text per line"),
    ("t.jsonl", b'{"text": "a"}\nnot json\n', {}, r"t.jsonl: line 2 is not valid JSON"),
    (
        "t.jsonl",
        b'{"text": "a"}\n{"body": "b"}\n',
        {},
        r"t.jsonl: line 2 has no field 'text' .pass text_column",
    ),
    ("t.jsonl", b'{"text": "a"}\n{"text": 5}\n', {}, r"t.jsonl: line 2, field 'text' is a int, not a text"),
    ("t.jsonl", b'{"text": "a"}\n[1]\n', {}, r"t.jsonl: line 2 is a JSON list, not an object"),
    ("t.csv", b"a,b\n1,2\n3,4\n", {"text_column": "body"}, r"text_column: no column 'body' in .*t.csv"),
    (
        "t.csv",
        b"id,body\nx,hello\ny,bye\n",
        {},
        r"t.csv: line 2, column 'body': 'hello' is not a number .pass text_c",
    ),
    (
        "t.csv",
        b"x,x,y\n1,2,3\n4,5,6\n",
        {},
        r"t.csv: the header repeats the column name 'x' \(columns 1 and 2\)",
    ),
    ("t.csv", b"w,f1\na,1\n\nb,nan\n", {}, r"t.csv: line 4, column 'f1': 'nan' is not a finite number"),
    ("t.csv", b"w,f1\na,1\nb,1e999\n", {}, r"t.csv: line 3, column 'f1': '1e999' is not a finite number"),
    ("t.csv", b"w,f1\na,1\nb,2,3\n", {}, r"t.csv: line 3 has 3 fields, the header has 2"),
    ("e.npy", None, {}, r"e.npy: expected a 2-D array"),
    ("e.npy", b"not an array", {}, r"e.npy: is not a readable .npy array"),
    ("e.npy", None, {"name_column": "x"}, r"name_column: .*e.npy is a NumPy array, it has no columns"),
]


def test_a_csv_with_a_byte_order_mark_names_its_first_column_as_written(tmp_path):
    from jaxclust.apps.items import read_items

    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffname,f1,f2\na,1,2\nb,3,4\n".encode())
    items = read_items(path, name_column="name")
    assert items.names == ["a", "b"] and items.columns == ["f1", "f2"]


def test_a_gold_label_column_left_out_is_no_feature(tmp_path):
    path = tmp_path / "g.csv"
    path.write_bytes(b"name,a,b,label\nx,1,2,0\ny,2,3,1\n")
    items = read_items(path, ignore_columns=("label",))
    assert items.columns == ["a", "b"]


def test_a_folder_given_as_the_data_file_is_named_as_a_folder(tmp_path):
    folder = tmp_path / "data.csv"
    folder.mkdir()
    with pytest.raises(InvalidInputError, match=r"data file .*data.csv' is a folder, not a file"):
        read_items(folder)


@pytest.mark.parametrize(("name", "content", "kw", "message"), BAD, ids=[m[:40] for *_, m in BAD])
def test_a_bad_file_is_a_named_error(tmp_path, name, content, kw, message):
    path = tmp_path / name
    if content is None:
        np.save(path, np.arange(5.0))
    else:
        path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=message):
        read_items(path, **kw)
    with pytest.raises(DatasetNotFoundError, match="missing.txt"):
        read_items(tmp_path / "missing.txt")


def test_items_from_python_lists_check_their_lengths():
    assert items_from_texts(TEXTS).names[0] == "text 0"
    with pytest.raises(InvalidInputError, match="names: 2 names for 6 texts"):
        items_from_texts(TEXTS, names=["a", "b"])
    with pytest.raises(InvalidInputError, match="texts: 2 texts for 3 rows of X"):
        items_from_array(np.zeros((3, 2)) + np.arange(3)[:, None], texts=["a", "b"])


# --- numbers: standardised, constant columns left to the model --------------------------------------------


def test_a_constant_column_is_passed_on_unchanged_not_zeroed():
    X = np.column_stack([np.arange(6.0), np.full(6, 5.0), np.arange(6.0) ** 2])
    Z = standardise(X)
    np.testing.assert_array_equal(Z[:, 1], 5.0)  # the model (the DPMM: left out with a warning) decides
    np.testing.assert_allclose(Z[:, [0, 2]].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z[:, [0, 2]].std(axis=0), 1.0)
    huge = standardise(np.array([[1e308], [-1e308], [5e307]]))
    assert np.all(np.isfinite(huge)) and abs(huge.std() - 1.0) < 1e-9


# --- texts: features saved with the store ----------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".sqlite", ".jsonl"])
def test_a_resumed_session_uses_the_saved_features_even_when_the_featuriser_changed(
    tmp_path, suffix, monkeypatch
):
    items = items_from_texts(TEXTS)
    store = tmp_path / f"a{suffix}"
    with AnswerStore(store) as s:
        X = session_features(items, s)
        meta = s.meta
    assert features_path(store, meta["fingerprint"]).is_file()
    assert meta["featurizer"]["featurizer"] == "wordllama" and meta["n"] == 6  # the default, when installed

    class Drifted:  # what another scikit-learn version or random stream might give
        def fit_transform(self, texts):
            return np.ones((len(texts), 3)) + np.arange(len(texts))[:, None]

    monkeypatch.setattr("jaxclust.text.embed.TextEmbedder", Drifted)
    monkeypatch.setattr("jaxclust.text.featurize.TextFeaturizer", Drifted)
    with AnswerStore(store) as s:
        np.testing.assert_array_equal(session_features(items, s), X)  # loaded, not recomputed


def test_a_changed_text_file_is_refused_with_an_error_naming_the_file(tmp_path):
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(TEXTS) + "\n")
    with AnswerStore(tmp_path / "a.sqlite") as s:
        session_features(read_items(data), s)
    data.write_text("\n".join([*TEXTS[:-1], "a sunny day with a strong breeze"]) + "\n")
    with AnswerStore(tmp_path / "a.sqlite") as s, pytest.raises(StoreMismatchError) as info:
        session_features(read_items(data), s)
    assert str(info.value).startswith(
        f"{data}: has other texts than those the answer store {tmp_path / 'a.sqlite'}"
    )
    assert info.value.key == "texts"
    data.write_text("\n".join(TEXTS[:-1]) + "\n")  # a line fewer
    with (
        AnswerStore(tmp_path / "a.sqlite") as s,
        pytest.raises(StoreMismatchError, match="has 5 items, not the 6"),
    ):
        session_features(read_items(data), s)


def test_texts_and_numbers_do_not_share_a_store(tmp_path):
    with AnswerStore(tmp_path / "a.jsonl") as s:
        session_features(items_from_texts(TEXTS), s)
    numbers = items_from_array(np.arange(12.0).reshape(6, 2) ** 1.5)
    with AnswerStore(tmp_path / "a.jsonl") as s, pytest.raises(StoreMismatchError, match="^X: holds numbers"):
        session_features(numbers, s)
    with AnswerStore(tmp_path / "b.jsonl") as s:
        X = session_features(numbers, s)
        s.check_meta({"n": 6, "fingerprint": data_fingerprint(X)})  # what the learner stores
    with (
        AnswerStore(tmp_path / "b.jsonl") as s,
        pytest.raises(StoreMismatchError, match="^texts: holds texts"),
    ):
        session_features(items_from_texts(TEXTS), s)
    changed = items_from_array(np.arange(12.0).reshape(6, 2) ** 1.4)
    with (
        AnswerStore(tmp_path / "b.jsonl") as s,
        pytest.raises(StoreMismatchError, match="^X: differs from the data"),
    ):
        session_features(changed, s)


def test_lost_features_are_recomputed_only_when_they_come_out_the_same(tmp_path, monkeypatch):
    items = items_from_texts(TEXTS)
    store = tmp_path / "a.sqlite"
    with AnswerStore(store) as s:
        X = session_features(items, s)
        side = features_path(store, s.meta["fingerprint"])
    side.unlink()
    with AnswerStore(store) as s:
        np.testing.assert_array_equal(session_features(items, s), X)  # same numbers: saved again
    assert side.is_file()
    side.write_bytes(b"damaged")
    monkeypatch.setattr("jaxclust.text.embed.TextEmbedder", lambda **k: _Shifted(X))  # the store's featuriser
    with (
        AnswerStore(store) as s,
        pytest.raises(StoreError, match=r"features saved with it .*a.sqlite.features-"),
    ):
        session_features(items, s)


class _Shifted:
    def __init__(self, X):
        self.X = X

    def fit_transform(self, texts):
        return self.X + 1e-9


@pytest.mark.parametrize("name", ["same.txt", "const.npy"])
def test_identical_items_name_the_file_and_create_no_store(tmp_path, name):
    from jaxclust.apps.features import compute_features

    path = tmp_path / name
    if name.endswith(".txt"):
        path.write_text("same text\nsame text\nsame text\n")
    else:
        np.save(path, np.ones((5, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy warning before the error
        with pytest.raises(InvalidInputError, match=rf"{name}: all \d+ (texts|rows) give the same features"):
            compute_features(read_items(path))


def test_ignored_columns_are_neither_features_nor_names(tmp_path):
    path = tmp_path / "lab.csv"
    path.write_text("word,gold,f1,f2,note\na,x,0.1,0.2,hi\nb,x,0.2,0.1,yo\nc,y,5.0,5.1,no\n")
    items = read_items(path, ignore_columns=("gold", "note"))
    assert items.columns == ["f1", "f2"] and items.names == ["a", "b", "c"] and items.X.shape == (3, 2)
    # without it the second text column is read as a feature: named, with the fix
    with pytest.raises(
        InvalidInputError, match=r"line 2, column 'gold': 'x' is not a number.*ignore_columns for"
    ):
        read_items(path)
