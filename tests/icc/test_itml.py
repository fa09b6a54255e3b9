"""ITML: closed-form projection property, agreement with metric-learn given the same bounds, input
handling."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.distance import pdist

from jaxclust.errors import InvalidInputError, NotFittedError
from jaxclust.icc.itml import ITML, default_bounds, itml_init, itml_sweep


def _patch_metric_learn():
    """metric-learn 0.7.0 passes ``force_all_finite``, which scikit-learn 1.9 renamed
    ``ensure_all_finite``."""
    import metric_learn._util as mu

    if getattr(mu, "_jaxclust_patched", False):
        return

    def rename(fn):
        def wrapped(*a, **k):
            if "force_all_finite" in k:
                k["ensure_all_finite"] = k.pop("force_all_finite")
            return fn(*a, **k)

        return wrapped

    mu.check_array = rename(mu.check_array)
    mu.check_X_y = rename(mu.check_X_y)
    mu._jaxclust_patched = True


def _problem(seed=0, n=60, d=4, m=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    lab = rng.integers(0, 3, n)
    P = rng.integers(0, n, size=(m, 2))
    P = P[P[:, 0] != P[:, 1]]
    y = np.where(lab[P[:, 0]] == lab[P[:, 1]], 1, -1)
    return X, P, y


@pytest.mark.parametrize("delta,p_scale", [(1.0, 3.0), (-1.0, 0.2)])
@pytest.mark.parametrize("gamma", [1.0, 4.0, np.inf])
def test_single_projection_meets_constraint_with_slack(delta, p_scale, gamma):
    # one violated constraint: after its projection v^T A' v equals the updated slack target xi' (closed form)
    rng = np.random.default_rng(1)
    d = 3
    B = rng.normal(size=(d, d))
    A0 = B @ B.T + d * np.eye(d)
    v = rng.normal(size=d)
    p0 = float(v @ A0 @ v)
    xi0 = p0 / p_scale  # similar: p > xi (violated); dissimilar: p < xi (violated)
    with jax.enable_x64(True):
        st = itml_init(jnp.asarray(A0), jnp.asarray([xi0]))
        st = itml_sweep(
            st, jnp.asarray(v[None]), jnp.asarray([delta]), jnp.asarray([True]), jnp.asarray(gamma)
        )
        A1, xi1, lam1 = np.asarray(st.A), float(st.xi[0]), float(st.lam[0])
    p1 = float(v @ A1 @ v)
    gp = 1.0 if np.isinf(gamma) else gamma / (gamma + 1)
    alpha = delta * gp * (1 / p0 - 1 / xi0)  # lambda = 0 and alpha < 0 for a violated constraint
    assert alpha < 0
    np.testing.assert_allclose(lam1, -alpha, rtol=1e-12)
    np.testing.assert_allclose(1 / p1, 1 / p0 - delta * alpha, rtol=1e-10)
    expected_xi = xi0 if np.isinf(gamma) else 1 / (1 / xi0 + delta * alpha / gamma)
    np.testing.assert_allclose(xi1, expected_xi, rtol=1e-10)
    np.testing.assert_allclose(p1, xi1, rtol=1e-10)  # the constraint holds with its slack, with equality
    assert np.linalg.eigvalsh(A1).min() > 0


def test_satisfied_constraint_is_left_alone():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    # similar pair at squared distance 1 <= u = 2, dissimilar at 9 >= l = 4: nothing to do
    itml = ITML(bounds=(2.0, 4.0)).fit(X, [[0, 1], [0, 2]], [1, -1])
    np.testing.assert_allclose(itml.get_mahalanobis_matrix(), np.eye(2), atol=0)
    assert itml.n_iter_ == 1


@pytest.mark.parametrize("gamma", [1.0, 10.0])
def test_matches_metric_learn_given_bounds(gamma):
    _patch_metric_learn()
    from metric_learn import ITML as RefITML

    X, P, y = _problem()
    bounds = np.array([2.0, 12.0])
    ours = ITML(gamma=gamma, bounds=tuple(bounds), tol=1e-3, max_iter=1000).fit(X, P, y)
    ref = RefITML(gamma=gamma, prior="identity", tol=1e-3, max_iter=1000).fit(X[P], y, bounds=bounds.copy())
    A_ref = ref.get_mahalanobis_matrix()
    np.testing.assert_allclose(ours.get_mahalanobis_matrix(), A_ref, rtol=1e-9, atol=1e-11)
    assert ours.n_iter_ == ref.n_iter_ + 1  # metric-learn reports the 0-based index of its last sweep


def test_default_bounds_are_squared_distance_percentiles():
    X, _, _ = _problem(n=40)
    upper, lower = default_bounds(X, np.eye(X.shape[1]))
    np.testing.assert_allclose((upper, lower), np.percentile(pdist(X, "sqeuclidean"), (5, 95)), rtol=1e-10)
    W = np.diag([1.0, 2.0, 3.0, 4.0])
    u2, l2 = default_bounds(X, W)
    np.testing.assert_allclose(
        (u2, l2), np.percentile(pdist(X * np.sqrt(np.diag(W)), "sqeuclidean"), (5, 95)), rtol=1e-10
    )


@pytest.mark.parametrize("at", [0, 7, None])
def test_identical_point_pairs_are_dropped(at):
    # an identical pair first, in the middle or last: the others are projected exactly as without it
    X, P, y = _problem()
    X2 = np.vstack([X, X[:1]])  # row 60 duplicates row 0
    at = len(P) if at is None else at
    P2 = np.insert(P, at, [0, 60], axis=0)
    y2 = np.insert(y, at, -1)
    a = ITML(bounds=(2.0, 12.0)).fit(X, P, y)
    b = ITML(bounds=(2.0, 12.0)).fit(X2, P2, y2)
    assert b.n_pairs_used_ == len(P) == len(b.lambda_)
    assert b.n_iter_ == a.n_iter_
    np.testing.assert_array_equal(b.lambda_, a.lambda_)
    np.testing.assert_allclose(a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix(), rtol=1e-12)


def test_hard_constraints_hold_after_convergence():
    # disjoint pairs with independent differences: the hard problem is feasible
    X, _, _ = _problem(seed=3)
    P = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    y = np.array([1, -1, 1, -1])
    itml = ITML(gamma=np.inf, bounds=(1.0, 10.0), tol=1e-9, max_iter=5000).fit(X, P, y)
    A = itml.get_mahalanobis_matrix()
    V = X[P[:, 0]] - X[P[:, 1]]
    d2 = np.einsum("ij,jk,ik->i", V, A, V)
    assert np.all(d2[y == 1] <= 1.0 * (1 + 1e-6))
    assert np.all(d2[y == -1] >= 10.0 * (1 - 1e-6))


def test_transform_and_distances_agree_with_matrix():
    X, P, y = _problem()
    itml = ITML(bounds=(2.0, 12.0)).fit(X, P, y)
    A = itml.get_mahalanobis_matrix()
    T = itml.transform(X)
    i, j = 3, 17
    v = X[i] - X[j]
    np.testing.assert_allclose(np.sum((T[i] - T[j]) ** 2), v @ A @ v, rtol=1e-10)
    np.testing.assert_allclose(itml.pairwise_distances(X)[i, j], np.sqrt(v @ A @ v), rtol=1e-8)


def test_constraints_object_equals_pairs():
    from jaxclust.constraints import Constraints

    X, _, _ = _problem()
    c = Constraints(60, must_link=[(0, 1), (2, 3)], cannot_link=[(0, 5), (4, 7)])
    a = ITML(bounds=(2.0, 12.0)).fit(X, c)
    b = ITML(bounds=(2.0, 12.0)).fit(X, [[0, 1], [2, 3], [0, 5], [4, 7]], [1, 1, -1, -1])
    np.testing.assert_allclose(a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix(), rtol=1e-12)


def test_bad_input_names_culprit():
    X, P, y = _problem()
    with pytest.raises(InvalidInputError, match="y: entry 2"):
        ITML().fit(X, P[:3], [1, -1, 0])
    with pytest.raises(InvalidInputError, match="pairs: pair 1"):
        ITML().fit(X, [[0, 1], [0, 99]], [1, 1])
    with pytest.raises(InvalidInputError, match="prior"):
        ITML(prior="nope").fit(X, P, y)
    with pytest.raises(InvalidInputError, match="gamma"):
        ITML(gamma=-1.0).fit(X, P, y)
    for bad in [(1.0,), (1.0, np.nan), (-1.0, 2.0), "ab", (1.0, 2.0, 3.0), 5.0]:
        with pytest.raises(InvalidInputError, match="bounds: expected two finite non-negative numbers"):
            ITML(bounds=bad).fit(X, P, y)
    with pytest.raises(InvalidInputError, match="y: entry 1 is 'a'"):
        ITML().fit(X, P[:2], np.array([1, "a"], dtype=object))
    with pytest.raises(NotFittedError):
        ITML().transform(X)


@pytest.mark.parametrize("bounds", [None, (2.0, 12.0)])
@pytest.mark.parametrize("row_in_a_pair", [True, False])
@pytest.mark.parametrize("value, kind", [(np.nan, "NaN"), (np.inf, "inf")])
def test_nonfinite_x_raises_naming_the_row(bounds, row_in_a_pair, value, kind):
    # with explicit bounds only the paired rows enter the model; a NaN elsewhere in X must still raise, and
    # leave the estimator unfitted
    X, _, _ = _problem()
    P, y = np.array([[0, 1], [2, 3], [4, 5]]), np.array([1, -1, 1])
    row = 3 if row_in_a_pair else 40
    X[row, 2] = value
    est = ITML(bounds=bounds)
    with pytest.raises(InvalidInputError, match=rf"X: row {row} has {kind} in column 2"):
        est.fit(X, P, y)
    assert not hasattr(est, "mahalanobis_")


@pytest.mark.parametrize("A", [np.diag([1.0, 0.0]), np.array([[2.0, 1.0], [1.0, 2.0]])])
def test_components_from_jax_cholesky_or_eigendecomposition(A):
    # the factor comes from jnp.linalg.cholesky inside the solver; a semi-definite A (NaN factor) must fall
    # back to the eigendecomposition, and either way A = L^T L
    from jaxclust.icc.itml import _components

    with jax.enable_x64(True):
        L = np.asarray(jnp.linalg.cholesky(jnp.asarray(A)).T)
    C = _components(A, L)
    np.testing.assert_allclose(C.T @ C, A, atol=1e-12)
    if np.linalg.eigvalsh(A).min() > 0:
        np.testing.assert_array_equal(C, L)


def test_explicit_identity_prior_equals_the_default():
    # "identity" is built on the device, an explicit matrix is passed in: both paths must agree exactly
    X, P, y = _problem()
    a = ITML(bounds=(2.0, 12.0)).fit(X, P, y)
    b = ITML(bounds=(2.0, 12.0), prior=np.eye(X.shape[1])).fit(X, P, y)
    np.testing.assert_array_equal(a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix())
    assert a.n_iter_ == b.n_iter_


def test_covariance_prior_is_inverse_covariance():
    X, _, _ = _problem()
    # one similar pair already inside its bound: nothing moves, A = A0
    itml = ITML(prior="covariance", bounds=(1e6, 1e7)).fit(X, [[0, 1]], [1])
    A0 = np.linalg.inv(np.cov(X, rowvar=False))
    np.testing.assert_allclose(itml.get_mahalanobis_matrix(), A0, rtol=1e-8)


def test_padding_schemes_give_the_same_metric():
    # 37 pairs: "fine" pads to 40, "pow2" to 64; padded constraints must be inert
    X, P, y = _problem(m=40)
    P, y = P[:37], y[:37]
    a = ITML(bounds=(2.0, 12.0), padding="fine").fit(X, P, y)
    b = ITML(bounds=(2.0, 12.0), padding="pow2").fit(X, P, y)
    np.testing.assert_allclose(a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix(), rtol=1e-12)
    assert a.n_iter_ == b.n_iter_


def _numpy_sweeps(A, V, delta, mask, xi, gamma, n_sweeps):
    """Reference: the released code's cyclic projections, one constraint at a time in NumPy."""
    gp = 1.0 if np.isinf(gamma) else gamma / (gamma + 1.0)
    ig = 0.0 if np.isinf(gamma) else 1.0 / gamma
    A, lam, xi = A.copy(), np.zeros(len(V)), xi.copy()
    for _ in range(n_sweeps):
        for c in np.flatnonzero(mask):
            v, dlt = V[c], delta[c]
            Av = A @ v
            p = v @ Av
            alpha = min(lam[c], dlt * gp * (1.0 / p - 1.0 / xi[c]))
            beta = dlt * alpha / (1.0 - dlt * alpha * p)
            xi[c] = 1.0 / (1.0 / xi[c] + dlt * alpha * ig)
            lam[c] -= alpha
            A = A + beta * np.outer(Av, Av)
        A = 0.5 * (A + A.T)
    return A, lam, xi


@jax.jit
def _three_sweeps(A0, xi, V, delta, mask, gamma):
    st = itml_init(A0, xi)
    for _ in range(3):
        st = itml_sweep(st, V, delta, mask, gamma)
    return st


@pytest.mark.parametrize("gamma", [1.0, np.inf])
def test_sweep_with_mask_holes_equals_numpy_reference(gamma):
    # 13 constraints (not a multiple of the 8-projection loop body), masked rows in the middle and at the
    # end (the loop stops after the last real constraint; the rest of its 8-block must be inert), several
    # sweeps so the duals and slacks carry over
    m, d = 13, 4
    rng = np.random.default_rng(m)
    V = rng.normal(size=(m, d))
    delta = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    mask = np.ones(m, bool)
    mask[[2, 11, 12]] = False  # the last real one (10) is not at the end of an 8-block; 11 is inside it
    xi = np.where(delta > 0, 1.0, 10.0)
    A0 = np.eye(d)
    with jax.enable_x64(True):
        st = _three_sweeps(*(jnp.asarray(a) for a in (A0, xi, V, delta, mask, gamma)))
        A, lam, xi_out = np.asarray(st.A), np.asarray(st.lam), np.asarray(st.xi)
    A_ref, lam_ref, xi_ref = _numpy_sweeps(A0, V, delta, mask, xi, gamma, 3)
    np.testing.assert_allclose(A, A_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lam, lam_ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(xi_out, xi_ref, rtol=1e-12)
    assert np.all(lam[~mask] == 0) and np.all(xi_out[~mask] == xi[~mask])
    assert int(st.n_sweeps) == 3


@pytest.mark.parametrize("d", [1, 31, 32, 33, 50, 65, 130])
def test_vdot_in_rows_of_at_most_32_equals_dot(d):
    from jaxclust.icc.itml import _vdot

    rng = np.random.default_rng(d)
    a, b = rng.normal(size=d), rng.normal(size=d)
    with jax.enable_x64(True):
        got = float(jax.jit(_vdot)(jnp.asarray(a), jnp.asarray(b)))
    np.testing.assert_allclose(got, a @ b, rtol=1e-13, atol=1e-13)
