"""Constrained complete link: shortest paths vs scipy, cuts vs scipy, cannot-link handling, Klein's active
queries."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import cut_tree, is_valid_linkage, linkage
from scipy.sparse.csgraph import csgraph_from_dense, shortest_path
from scipy.spatial.distance import pdist, squareform
from sklearn.metrics import adjusted_rand_score

from jaxclust.constraints import Constraints
from jaxclust.errors import ConstraintError, InvalidInputError
from jaxclust.icc.agglomerative import (
    ConstrainedAgglomerative,
    constrained_complete_link,
    cut_by_merge_count,
    euclidean_distances,
    impose_cannot_links,
    klein_active_queries,
    propagate_must_links,
)


def _points(n=40, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


@pytest.mark.parametrize("n", [40, 300])  # 300 > two 128-row blocks: checks the blocked, mirrored update
def test_must_link_propagation_equals_all_pairs_shortest_paths(n):
    X = _points(n)
    D = squareform(pdist(X))
    c = Constraints(n, must_link=[(0, 1), (1, 2), (5, 9), (9, 30), (11, 12), (3, n - 1), (n - 1, n - 30)])
    ours = propagate_must_links(D, [g for g in c.groups if len(g) > 1])
    G = D.copy()
    for i, j in c.must_link:
        G[i, j] = G[j, i] = 0.0
    np.fill_diagonal(G, np.inf)  # non-edges for csgraph; explicit zeros stay edges
    ref = shortest_path(csgraph_from_dense(G, null_value=np.inf), method="FW", directed=False)
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    assert ours[0, 2] == 0.0 and ours[5, 30] == 0.0


def test_cannot_link_tie_break_values():
    D = squareform(pdist(_points(6)))
    Dc, B = impose_cannot_links(D, np.array([[0, 3], [2, 5]]))
    assert B == D.max() + 1
    assert Dc[0, 3] == Dc[3, 0] == B + D[0, 3]
    assert Dc[5, 2] == B + D[2, 5]
    mask = np.ones_like(D, bool)
    mask[[0, 3, 2, 5], [3, 0, 5, 2]] = False
    np.testing.assert_array_equal(Dc[mask], D[mask])


@pytest.mark.parametrize("k", [2, 5, 17])
def test_cut_by_merge_count_matches_scipy_cut_tree(k):
    Z = linkage(pdist(_points()), method="complete")
    ours = cut_by_merge_count(Z, 40, k)
    ref = cut_tree(Z, n_clusters=k).ravel()
    assert adjusted_rand_score(ref, ours) == 1.0
    assert set(ours) == set(range(k)) and ours[0] == 0


def test_unconstrained_equals_sklearn_complete_linkage():
    from sklearn.cluster import AgglomerativeClustering

    X = _points(50)
    ours = ConstrainedAgglomerative(4).fit(X).labels_
    ref = AgglomerativeClustering(4, linkage="complete").fit(X).labels_
    assert adjusted_rand_score(ref, ours) == 1.0


def test_constraints_are_honoured_and_violations_reported():
    # two tight pairs far apart on a line; k = 2
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    base = ConstrainedAgglomerative(2).fit(X).labels_
    assert base[0] == base[1] and base[2] == base[3]
    # cannot-link (0, 1) + must-link (1, 2): {1, 2} together, 0 apart from them, 3 joins the nearer side
    c = Constraints(4, must_link=[(1, 2)], cannot_link=[(0, 1)])
    m = ConstrainedAgglomerative(2).fit(X, c)
    lab = m.labels_
    assert lab[1] == lab[2] and lab[0] != lab[1] and lab[3] == lab[2]
    assert m.n_violated_ == 0
    # three mutually cannot-linked points cannot fit in 2 clusters: exactly one pair must be violated
    c3 = Constraints(4, cannot_link=[(0, 1), (0, 2), (1, 2)])
    m3 = ConstrainedAgglomerative(2).fit(X, c3)
    assert m3.n_violated_ == 1 == len(c3.check_assignment(m3.labels_))


def test_precomputed_equals_euclidean():
    X = _points(30)
    c = Constraints(30, must_link=[(0, 7)], cannot_link=[(1, 2), (3, 4)])
    a = ConstrainedAgglomerative(3).fit(X, c).labels_
    b = ConstrainedAgglomerative(3, metric="precomputed").fit(euclidean_distances(X), c).labels_
    np.testing.assert_array_equal(a, b)


def test_klein_queries_roots_of_closest_clusters():
    # four tight triples at 0, 10, 30, 100 labelled A, A, B, B (see klein_active_queries docstring)
    centres = [0.0, 10.0, 30.0, 100.0]
    X = np.array([[c + e] for c in centres for e in (-0.1, 0.0, 0.1)])
    gold = np.repeat(["A", "A", "B", "B"], 3)
    D = euclidean_distances(X)
    asked = []
    q, labs = klein_active_queries(D, lambda i: (asked.append(i), gold[i])[1], budget=10, n_start=4)
    # roots are the medoids (middle points); merges A+A, block A|B, merge B+B, block, then nothing is left
    assert q == [1, 4, 7, 10] == asked
    assert labs == ["A", "A", "B", "B"]
    q2, _ = klein_active_queries(D, lambda i: gold[i], budget=3, n_start=4)
    assert q2 == [1, 4, 7]


def test_bad_input():
    with pytest.raises(InvalidInputError, match="square"):
        ConstrainedAgglomerative(2, metric="precomputed").fit(np.ones((3, 2)))
    with pytest.raises(InvalidInputError, match="n_clusters"):
        ConstrainedAgglomerative(0).fit(_points(5))
    with pytest.raises(ConstraintError, match="constraints: built for 6 items"):
        ConstrainedAgglomerative(2).fit(_points(5), Constraints(6))


def _incremental_must_links(D, pairs):
    """Reference: the per-must-link O(n^2) update D <- min(D, D[:, i] + D[j, :], D[:, j] + D[i, :])."""
    D = D.copy()
    for i, j in pairs:
        D = np.minimum(D, np.minimum(D[:, i : i + 1] + D[j : j + 1, :], D[:, j : j + 1] + D[i : i + 1, :]))
    return D


@pytest.mark.parametrize("branch", ["auto", "dense", "sparse"])
@pytest.mark.parametrize("spread", [0.05, 3.0])
def test_pruned_min_plus_equals_incremental_updates(spread, branch, monkeypatch):
    # tight blobs around the linked points (spread 0.05: most pairs near members, the lower bound prunes
    # little) and diffuse data (spread 3: the bound prunes most pairs); 600 points span five row blocks.
    # Each block picks dense passes or gathered candidates; both are forced here too.
    import jaxclust.icc.agglomerative as agg

    monkeypatch.setattr(
        agg, "_SPARSE_FRACTION", {"auto": agg._SPARSE_FRACTION, "dense": 0.0, "sparse": 2.0}[branch]
    )
    rng = np.random.default_rng(7)
    centres = rng.normal(scale=4.0, size=(6, 3))
    X = centres[rng.integers(0, 6, 600)] + rng.normal(scale=spread, size=(600, 3))
    D = euclidean_distances(X)
    pairs = [tuple(p) for p in rng.choice(600, size=(25, 2), replace=False)] + [(3, 4), (4, 5), (5, 77)]
    c = Constraints(600, must_link=pairs)
    ours = propagate_must_links(D, [g for g in c.groups if len(g) > 1])
    ref = _incremental_must_links(D, pairs)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    assert np.array_equal(ours, ours.T)
    assert (ours < D - 1e-9).mean() > 0.01  # the constraints do shorten many distances


def _ml_cl_instance(seed, n):
    """Must-links from the labels of queried points (ICC's case) plus random cannot-links elsewhere."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    q = rng.choice(n, size=int(rng.integers(4, min(40, n // 2))), replace=False)
    lab = rng.integers(0, int(rng.integers(2, 6)), q.size)
    groups = [q[lab == k] for k in np.unique(lab)]
    cl = [(q[i], q[j]) for i in range(q.size) for j in range(i + 1, q.size) if lab[i] != lab[j]]
    others = np.setdiff1d(np.arange(n), q)
    cl += [tuple(rng.choice(others, 2, replace=False)) for _ in range(5)]
    return euclidean_distances(X), groups, np.array(cl)


@pytest.mark.parametrize("seed", range(6))
def test_contracted_path_equals_full_matrix(seed):
    # random data has no exact distance ties, so both paths make the same merges
    n = [30, 80, 250][seed % 3]
    D, groups, cl = _ml_cl_instance(seed, n)
    n_nodes = n - sum(g.size - 1 for g in groups)
    for k in (1, 3, 7, n_nodes):
        a, Za, Dk, va = constrained_complete_link(D, k, groups, cl, contract=True)
        b, Zb, _, vb = constrained_complete_link(D, k, groups, cl, contract=False)
        assert Dk.shape == (n_nodes * (n_nodes - 1) // 2,)  # the contracted matrix was clustered
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(va, vb)
        assert is_valid_linkage(Za)
        np.testing.assert_allclose(np.sort(Za[:, 2]), np.sort(Zb[:, 2]), rtol=1e-12)
        np.testing.assert_array_equal(Za[:, 3][Za[:, 2] > 0], Zb[:, 3][Zb[:, 2] > 0])
        assert adjusted_rand_score(cut_tree(Za, n_clusters=k).ravel(), a) == 1.0


def test_contraction_falls_back_when_it_does_not_apply():
    D, groups, cl = _ml_cl_instance(1, 60)
    n_nodes = 60 - sum(g.size - 1 for g in groups)
    # more clusters than contracted nodes, and a cannot-link inside a group: the full matrix is clustered
    for k, cl2 in ((n_nodes + 1, cl), (3, np.vstack([cl, groups[0][:2]]))):
        a, _, Dc, va = constrained_complete_link(D, k, groups, cl2, contract=True)
        b, _, _, vb = constrained_complete_link(D, k, groups, cl2, contract=False)
        assert Dc.shape == (60, 60)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(va, vb)


def test_auto_contracts_only_when_a_tenth_of_the_rows_go():
    D = euclidean_distances(_points(100))
    few = [np.array([0, 1, 2])]  # removes 2 rows of 100: full matrix
    many = [np.arange(0, 6), np.arange(10, 16)]  # removes 10 rows: contracted (condensed matrix returned)
    a, _, Dc_few, _ = constrained_complete_link(D, 5, few)
    b, _, Dc_many, _ = constrained_complete_link(D, 5, many)
    assert Dc_few.shape == (100, 100) and Dc_many.shape == (90 * 89 // 2,)
    np.testing.assert_array_equal(b, constrained_complete_link(D, 5, many, contract=False)[0])
    with pytest.raises(InvalidInputError, match="contract"):
        constrained_complete_link(D, 5, few, contract="yes")
