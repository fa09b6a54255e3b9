"""Evaluation metrics: partition comparison (host and jittable), coreference scores, CoNLL-2012 files.

- :mod:`jaxclust.metrics.partition`: NumPy versions with scikit-learn's edge cases (V-measure, V-beta, VI,
  purity, ARI, NMI, pairwise link accuracy).
- :mod:`jaxclust.metrics.jax_partition`: jittable/vmappable versions with a fixed label capacity.
- :mod:`jaxclust.metrics.coref`: MUC, B³, CEAFm, CEAFe, BLANC, LEA, CoNLL F1 and micro-averaged corpus scores,
  with the CoNLL reference scorer's semantics.
- :mod:`jaxclust.metrics.conll`: reader/writer of the CoNLL-2012 coreference column.
"""

from __future__ import annotations

import importlib
from typing import Any

from jaxclust.metrics.conll import (
    ConllDocument,
    format_coref_cells,
    parse_conll,
    read_conll,
    score_conll,
    write_conll,
)
from jaxclust.metrics.coref import (
    b_cubed,
    b_cubed_counts,
    blanc,
    blanc_counts,
    blanc_from_counts,
    ceaf_e,
    ceaf_e_counts,
    ceaf_m,
    ceaf_m_counts,
    clusters_from_labels,
    conll_f1,
    corpus_scores,
    lea,
    lea_counts,
    muc,
    muc_counts,
    prf,
)
from jaxclust.metrics.partition import (
    Contingency,
    adjusted_rand_index,
    completeness,
    contingency,
    entropy,
    homogeneity,
    homogeneity_completeness_v_measure,
    inverse_purity,
    mutual_info,
    normalized_mutual_info,
    pair_confusion,
    pairwise_link_accuracy,
    purity,
    v_beta,
    v_measure,
    variation_of_information,
)

__all__ = [
    # partition (host)
    "Contingency",
    "contingency",
    "entropy",
    "mutual_info",
    "homogeneity_completeness_v_measure",
    "homogeneity",
    "completeness",
    "v_measure",
    "v_beta",
    "variation_of_information",
    "purity",
    "inverse_purity",
    "adjusted_rand_index",
    "normalized_mutual_info",
    "pairwise_link_accuracy",
    "pair_confusion",
    # partition (jittable)
    "jax_partition",
    # coreference
    "prf",
    "muc",
    "muc_counts",
    "b_cubed",
    "b_cubed_counts",
    "ceaf_m",
    "ceaf_m_counts",
    "ceaf_e",
    "ceaf_e_counts",
    "blanc",
    "blanc_counts",
    "blanc_from_counts",
    "lea",
    "lea_counts",
    "conll_f1",
    "corpus_scores",
    "clusters_from_labels",
    # CoNLL-2012 files
    "ConllDocument",
    "parse_conll",
    "format_coref_cells",
    "read_conll",
    "write_conll",
    "score_conll",
]


def __getattr__(name: str) -> Any:
    # the jittable path imports JAX; load it only when asked for
    if name == "jax_partition":
        return importlib.import_module("jaxclust.metrics.jax_partition")
    raise AttributeError(f"module 'jaxclust.metrics' has no attribute {name!r}")
