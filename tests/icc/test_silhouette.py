"""silh_const against a literal transcription of the seed's definition and against scikit-learn's
silhouette."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import pdist, squareform
from sklearn.metrics import silhouette_samples

from jaxclust.icc.silhouette import silh_const_scores, silh_const_weights


def _reference(D, clusters, labeled_idx, labels):
    """Section 4.2.2, step by step, with the module's documented edge-case conventions."""
    n = len(clusters)
    lab = {int(i): lab_i for i, lab_i in zip(labeled_idx, labels, strict=True)}
    out = np.zeros(n)
    for i in range(n):
        own = clusters[i]
        own_lab = [lab[j] for j in lab if clusters[j] == own]
        if not own_lab:
            out[i] = -1.0
            continue
        vals, cnt = np.unique(own_lab, return_counts=True)
        li = lab.get(i, vals[np.argmax(cnt)])
        others = [j for j in lab if clusters[j] == own and j != i]
        x = np.mean([D[i, j] for j in others]) if others else 0.0
        ys = []
        for c in set(clusters) - {own}:
            members = [j for j in lab if clusters[j] == c]
            if any(lab[j] != li for j in members):
                ys.append(np.mean([D[i, j] for j in members]))
        if not ys:
            out[i] = 1.0
            continue
        y = min(ys)
        out[i] = 0.0 if max(x, y) == 0 else (y - x) / max(x, y)
    return out


def test_matches_literal_definition():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    D = squareform(pdist(X))
    clusters = rng.integers(0, 5, 30)
    clusters[:5] = np.arange(5)
    labeled = np.array([0, 1, 2, 5, 6, 7, 8, 9, 12, 20])
    labels = np.array(["S", "O", "S", "S", "O", "O", "S", "O", "S", "O"])
    ours = silh_const_scores(D, clusters, labeled, labels)
    np.testing.assert_allclose(ours, _reference(D, clusters, labeled, labels), atol=1e-12)


def test_unlabelled_cluster_scores_minus_one_and_no_opposition_scores_one():
    D = squareform(pdist(np.arange(6.0)[:, None]))
    clusters = np.array([0, 0, 1, 1, 2, 2])
    s = silh_const_scores(D, clusters, [0, 2], ["S", "S"])
    np.testing.assert_array_equal(s[[4, 5]], [-1.0, -1.0])  # cluster 2 holds no label
    np.testing.assert_array_equal(s[[1, 3]], [1.0, 1.0])  # no cluster holds an opposing label


def test_all_labelled_one_label_per_cluster_equals_silhouette():
    # every instance labelled with its cluster id: x = a(i), every other cluster is opposing, so y = b(i)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(25, 3))
    clusters = np.repeat(np.arange(5), 5)
    D = squareform(pdist(X))
    ours = silh_const_scores(D, clusters, np.arange(25), clusters)
    np.testing.assert_allclose(ours, silhouette_samples(D, clusters, metric="precomputed"), atol=1e-12)


def test_figure_one_prefers_point_far_from_own_labels_near_opposing_cluster():
    # own cluster 0: labelled S at 0; member 1 away from the opposing cluster, members 2, 3 near cluster 1 (O)
    X = np.array([[0.0, 0.0], [-1.0, 0.0], [2.0, 0.0], [2.5, 1.5], [4.0, 0.0], [4.0, 1.0]])
    clusters = np.array([0, 0, 0, 0, 1, 1])
    s = silh_const_scores(squareform(pdist(X)), clusters, [0, 4, 5], ["S", "O", "O"])
    assert s[1] > s[2] and s[1] > s[3]
    assert np.argmin(np.where(np.isin(np.arange(6), [0, 4, 5]), np.inf, s)) in (2, 3)


def test_weights_map_linearly_to_unit_interval():
    np.testing.assert_allclose(silh_const_weights([-1.0, 0.0, 0.5, 1.0]), [0.0, 0.5, 0.75, 1.0])
