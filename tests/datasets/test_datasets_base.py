"""Data-directory resolution, the missing-data errors, the Dataset record and the loader registry."""

from __future__ import annotations

import numpy as np
import pytest

from jaxclust import datasets as D
from jaxclust.datasets.base import check_choice, dataset_folder, encode_labels, resolve_data_dir
from jaxclust.errors import DatasetNotFoundError, InvalidInputError

# (loader, kwargs, folder named in the error, a file named in the error)
MISSING_CASES = [
    (D.load_verbs_general, {}, "verbs_general_verbnet33_valex", "vn_valex_balanced_46x12_relfreq.csv"),
    (
        D.load_verbs_general,
        {"subset": "full", "features": "counts"},
        "verbs_general_verbnet33_valex",
        "vn_valex_raw_counts.csv",
    ),
    (D.load_verbs_biomed, {}, "verbs_biomed_bioverbnet_biocat", "bioverb_scf_relfreq_filter.csv"),
    (D.load_senseval2, {}, "senseval2_nltk", "instances.jsonl"),
    (D.load_subjectivity, {}, "pang_lee_subjectivity_v1", "sentences.tsv"),
    (D.load_litbank, {}, "coref/litbank", "folds.json"),
    (D.load_gum, {"split": "test2"}, "coref/gum", "test2.jsonl"),
    (D.load_newsgroups, {}, "newsgroups20_bydate", "20news_bydate.jsonl.gz"),
    (D.load_nps_chat, {}, "nps_chat", "posts.tsv"),
    (D.load_bbc_news, {}, "bbc_news", "bbc_news.jsonl"),
    (
        D.load_clustering_benchmark,
        {"battery": "uci", "name": "wine"},
        "clustering_benchmarks_v1/uci",
        "wine.data.gz",
    ),
]


@pytest.mark.parametrize(
    "loader, kwargs, folder, file",
    MISSING_CASES,
    ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(MISSING_CASES)],
)
def test_missing_dataset_error_names_folder_and_files(tmp_path, loader, kwargs, folder, file):
    with pytest.raises(DatasetNotFoundError) as err:
        loader(data_dir=tmp_path, **kwargs)
    msg = str(err.value)
    assert repr(folder) in msg
    assert file in msg
    assert "JAXCLUST_DATA" in msg
    assert str(tmp_path) in msg


def test_missing_file_in_present_folder_is_listed_as_missing(tmp_path):
    folder = tmp_path / "nps_chat"
    folder.mkdir()
    (folder / "other.tsv").write_text("x")
    with pytest.raises(DatasetNotFoundError, match=r"missing posts\.tsv"):
        D.load_nps_chat(data_dir=tmp_path)


def test_env_variable_is_used_when_no_argument(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXCLUST_DATA", str(tmp_path))
    assert resolve_data_dir() == tmp_path
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("x")
    assert dataset_folder("sub", ["a.txt"]) == tmp_path / "sub"
    # an explicit argument wins over the environment
    other = tmp_path / "sub"
    assert resolve_data_dir(other) == other


def test_no_argument_and_no_env_explains_how_to_set_it(monkeypatch):
    monkeypatch.delenv("JAXCLUST_DATA", raising=False)
    with pytest.raises(DatasetNotFoundError, match="JAXCLUST_DATA") as err:
        D.load_bbc_news()
    assert "'bbc_news'" in str(err.value) and "bbc_news.jsonl" in str(err.value)


def test_nonexistent_data_dir_is_named(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(DatasetNotFoundError, match="does not exist") as err:
        resolve_data_dir(missing)
    assert str(missing) in str(err.value)
    assert isinstance(err.value, FileNotFoundError)


def test_encode_labels_sorted_and_given_order():
    codes, names = encode_labels(["b", "a", "c", "a"])
    np.testing.assert_array_equal(codes, [1, 0, 2, 0])
    assert names == ["a", "b", "c"]
    codes, names = encode_labels(["b", "a", "c", "a"], order=["c", "b", "a"])
    np.testing.assert_array_equal(codes, [1, 2, 0, 2])
    assert [names[c] for c in codes] == ["b", "a", "c", "a"]
    assert codes.dtype == np.int64


def test_bad_arguments_name_the_parameter(tmp_path):
    with pytest.raises(InvalidInputError, match=r"subset='half'"):
        D.load_verbs_general(subset="half", data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"level=4"):
        D.load_verbs_biomed(level=4, data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"word='bank'"):
        D.load_senseval2(word="bank", data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"split='valid'"):
        D.load_gum(split="valid", data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"fold=10"):
        D.load_litbank(fold=10, data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"remove='signatures'"):
        D.load_newsgroups(remove=("signatures",), data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"min_posts=0"):
        D.load_nps_chat(min_posts=0, data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"battery='mnist'"):
        D.load_clustering_benchmark("mnist", "digits", data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match=r"name='\.\./x'"):
        D.load_clustering_benchmark("uci", "../x", data_dir=tmp_path)
    with pytest.raises(InvalidInputError, match="x"):
        check_choice("x", "label", ("a",))


def test_load_dataset_dispatches_and_rejects_unknown_names():
    ds = D.load_dataset("iris")
    assert ds.name == "iris"
    with pytest.raises(InvalidInputError, match="'imagenet'"):
        D.load_dataset("imagenet")
    assert set(D.LOADERS) >= {
        "verbs_general",
        "verbs_biomed",
        "senseval2",
        "subjectivity",
        "litbank",
        "gum",
        "newsgroups",
        "nps_chat",
        "bbc_news",
        "wine",
        "digits",
        "iris",
    }


def test_dataset_record_properties():
    ds = D.Dataset(
        name="t",
        X=np.zeros((4, 2)),
        texts=None,
        labels={"a": np.array([0, 1, 1, 0]), "b": np.array([0, 0, 0, 1])},
        label_names={"a": ["x", "y"], "b": ["p", "q"]},
        item_names=list("abcd"),
        feature_names=None,
        target="b",
        extra={},
    )
    np.testing.assert_array_equal(ds.y, [0, 0, 0, 1])
    assert len(ds) == ds.n_items == 4
    assert ds.n_classes == 2
    with pytest.raises(AttributeError):
        ds.name = "u"  # frozen record
    noisy = D.Dataset(
        name="n",
        X=None,
        texts=None,
        labels={"l": np.array([0, 1, 2, 2])},
        label_names={"l": ["noise", "1", "2"]},
        item_names=list("abcd"),
        feature_names=None,
        target="l",
        extra={"noise_label": 0},
    )
    assert noisy.n_classes == 2


def test_import_pulls_in_neither_jax_nor_sklearn():
    import subprocess
    import sys

    code = "import sys, jaxclust.datasets; print('jax' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
