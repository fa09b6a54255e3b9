"""Data set loaders: evaluation corpora from a data directory, scikit-learn's bundled sets as the default.

Evaluation data sets are read from ``data_dir`` or ``$JAXCLUST_DATA`` (never shipped with jaxclust: their
licences forbid it); a missing folder raises ``DatasetNotFoundError`` naming the folder and files expected.

Example
-------
>>> from jaxclust.datasets import load_iris
>>> ds = load_iris()
>>> ds.X.shape, ds.n_classes
((150, 4), 3)
"""

from __future__ import annotations

from jaxclust.datasets.base import DATA_ENV, CorefDocument, Dataset, Mention, resolve_data_dir
from jaxclust.datasets.clustering_benchmarks import list_clustering_benchmarks, load_clustering_benchmark
from jaxclust.datasets.coref import load_gum, load_litbank
from jaxclust.datasets.posts import load_bbc_news, load_newsgroups, load_nps_chat
from jaxclust.datasets.senseval import load_senseval2
from jaxclust.datasets.sklearn_sets import load_digits, load_iris, load_wine
from jaxclust.datasets.subjectivity import load_subjectivity
from jaxclust.datasets.verbs import load_verbs_biomed, load_verbs_general
from jaxclust.errors import InvalidInputError

__all__ = [
    "DATA_ENV",
    "Dataset",
    "CorefDocument",
    "Mention",
    "resolve_data_dir",
    "load_dataset",
    "LOADERS",
    "load_verbs_general",
    "load_verbs_biomed",
    "load_senseval2",
    "load_subjectivity",
    "load_litbank",
    "load_gum",
    "load_newsgroups",
    "load_nps_chat",
    "load_bbc_news",
    "load_clustering_benchmark",
    "list_clustering_benchmarks",
    "load_wine",
    "load_digits",
    "load_iris",
]

# name -> loader, for CLIs and experiment scripts (``load_dataset("verbs_general", subset="full")``)
LOADERS = {
    "verbs_general": load_verbs_general,
    "verbs_biomed": load_verbs_biomed,
    "senseval2": load_senseval2,
    "subjectivity": load_subjectivity,
    "litbank": load_litbank,
    "gum": load_gum,
    "newsgroups": load_newsgroups,
    "nps_chat": load_nps_chat,
    "bbc_news": load_bbc_news,
    "clustering_benchmark": load_clustering_benchmark,
    "wine": load_wine,
    "digits": load_digits,
    "iris": load_iris,
}


def load_dataset(name: str, /, **kwargs):
    """Call the loader registered under ``name`` in ``LOADERS`` with ``kwargs``.

    Raises
    ------
    InvalidInputError
        When ``name`` is not a registered loader, or a keyword is not one of its options.
    """
    import inspect

    if name not in LOADERS:
        raise InvalidInputError(f"unknown dataset {name!r}; known: {', '.join(sorted(LOADERS))}")
    known = list(inspect.signature(LOADERS[name]).parameters)
    unknown = [k for k in kwargs if k not in known]
    if unknown:
        raise InvalidInputError(
            f"{unknown[0]}: not an option of the {name!r} loader (options: {', '.join(known) or 'none'})"
        )
    return LOADERS[name](**kwargs)
