"""Input validation names the culprit."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxclust.errors import InvalidInputError
from jaxclust.validation import check_array, check_index, check_labels, check_positive, prng_key, seed_from


def test_check_array_names_row_and_column_of_nan_and_inf():
    X = np.zeros((20, 5))
    X[17, 3] = np.nan
    with pytest.raises(InvalidInputError, match=r"row 17 has NaN in column 3"):
        check_array(X)
    X[17, 3] = 0
    X[2, 1] = -np.inf
    with pytest.raises(InvalidInputError, match=r"row 2 has -inf in column 1"):
        check_array(X, name="features")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_check_array_ready_arrays_pass_huge_values_and_name_each_nonfinite_kind(dtype):
    # arrays already of the asked-for dtype take check_array's no-conversion path: huge finite entries must
    # pass it, and a single NaN / inf / -inf anywhere, alone or next to huge values, must be named
    big = np.finfo(dtype).max / 2
    X = np.full((7, 3), big, dtype=dtype)
    np.testing.assert_array_equal(check_array(X, dtype=dtype), X)
    for value, kind in [(np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")]:
        for base in (np.zeros((7, 3), dtype), X):
            Z = base.copy()
            Z[5, 2] = value
            with pytest.raises(InvalidInputError, match=rf"row 5 has {kind} in column 2"):
                check_array(Z, dtype=dtype)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.zeros(5), "2-D"),
        (np.zeros((1, 3)), "at least 2 rows"),
        (np.zeros((1, 3)), "1 sample"),
        (np.zeros((4, 0)), "at least 1 columns"),
        (np.zeros((4, 0)), r"0 feature\(s\) \(shape=\(4, 0\)\)"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
        (np.array([[1 + 1j, 2], [3, 4]]), "complex"),
        ([[1, 2], [3]], "cannot be converted|numeric"),
    ],
)
def test_check_array_rejects(X, match):
    with pytest.raises(InvalidInputError, match=match):
        check_array(X)


def test_check_array_returns_contiguous_float64_copy_of_ints_and_jax():
    X = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    out = check_array(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)
    np.testing.assert_array_equal(check_array(jax.numpy.ones((3, 2))), np.ones((3, 2)))


def test_check_array_object_dtype():
    X = np.array([[1, 2.5], [3, 4]], dtype=object)
    np.testing.assert_array_equal(check_array(X), [[1, 2.5], [3, 4]])
    X[0, 0] = {"a": 1}
    with pytest.raises(TypeError, match="must be a string or a real number"):
        check_array(X)


def test_check_array_rejects_sparse():
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(InvalidInputError, match="sparse"):
        check_array(sp.eye(3, format="csr"))


def test_check_labels():
    np.testing.assert_array_equal(check_labels([3.0, -1.0, 3.0]), [3, -1, 3])
    with pytest.raises(InvalidInputError, match="entry 1 is 0.5"):
        check_labels([1, 0.5])
    with pytest.raises(InvalidInputError, match="expected 3 labels"):
        check_labels([1, 2], n=3)
    with pytest.raises(InvalidInputError, match="1-D"):
        check_labels(np.zeros((2, 2)))
    with pytest.raises(InvalidInputError, match="integer labels"):
        check_labels(["a", "b"])
    assert check_labels([]).dtype == np.int64


def test_check_index_and_positive():
    assert check_index(np.int64(3), 5) == 3
    with pytest.raises(InvalidInputError, match="out of range"):
        check_index(5, 5)
    with pytest.raises(InvalidInputError, match="not an integer"):
        check_index(1.0, 5)
    with pytest.raises(InvalidInputError, match="alpha"):
        check_positive(0.0, "alpha")
    assert check_positive(0.0, "l2", strict=False) == 0.0


def test_seeds_are_reproducible_and_explicit():
    assert seed_from(None) == 0 and seed_from(7) == 7
    with pytest.raises(InvalidInputError):
        seed_from(-1)
    with pytest.raises(InvalidInputError):
        seed_from("seed")
    k1, k2 = prng_key(3), prng_key(3)
    np.testing.assert_array_equal(jax.random.key_data(k1), jax.random.key_data(k2))
    assert prng_key(k1) is k1
    a = jax.random.normal(prng_key(5), (3,))
    b = jax.random.normal(prng_key(np.random.RandomState(0)), (3,))
    assert not np.allclose(a, b)


def test_declared_hyperparameters_are_checked_and_named_as_spelled():
    from jaxclust.validation import Int, Options, Real, validate_params

    class Est:
        _parameter_constraints = {
            "k": Int(1),
            "tol": Real(0.0),
            "rate": Real(0.0, 1.0, strict=True),
            "gamma": Real(0.0, strict=True, allow_inf=True),
            "cap": Int(1, none=True),
            "mode": Options(("a", "b")),
        }

        def __init__(self, **kw):
            self.__dict__.update(
                {"k": 2, "tol": 0, "rate": 0.5, "gamma": np.inf, "cap": None, "mode": "a", **kw}
            )

    got = validate_params(Est(k=np.int64(3)))
    assert got == {"k": 3, "tol": 0.0, "rate": 0.5, "gamma": np.inf, "cap": None, "mode": "a"}
    assert type(got["k"]) is int and type(got["tol"]) is float
    bad = [
        ({"k": 0}, "Est(k=0): expected an int >= 1"),
        ({"k": True}, "Est(k=True): expected an int >= 1"),
        ({"k": 2.0}, "Est(k=2.0): expected an int >= 1"),
        ({"tol": np.nan}, "Est(tol=nan): expected a finite number >= 0.0"),
        ({"tol": "0"}, "Est(tol='0'): expected a finite number >= 0.0"),
        ({"rate": 1.0}, "Est(rate=1.0): expected a finite number > 0.0 and < 1.0"),
        ({"gamma": 0.0}, "Est(gamma=0.0): expected a number > 0.0"),
        ({"cap": 0}, "Est(cap=0): expected None or an int >= 1"),
        ({"mode": "A"}, "Est(mode='A'): expected one of 'a', 'b'"),
    ]
    for kw, message in bad:
        with pytest.raises(InvalidInputError) as info:
            validate_params(Est(**kw))
        assert str(info.value) == message


def test_a_number_or_an_array_of_numbers_each_checked():
    from jaxclust.validation import Real, Reals, check_rule

    rule = Reals(Real(0.0, none=True))
    assert check_rule(rule, None, "step") is None and check_rule(rule, 2, "step") == 2.0
    got = check_rule(rule, [0, 0.5], "step")
    assert got.dtype == np.float64 and got.tolist() == [0.0, 0.5]
    for bad in ([0.1, -1.0], [[0.1]], [True, False], ["a"], [0.1, np.nan], "0.1"):
        with pytest.raises(
            InvalidInputError, match=r"step: expected None or a finite number >= 0.0, or a 1-d"
        ):
            check_rule(rule, bad, "step")


def test_every_declared_hyperparameter_is_a_constructor_argument():
    import importlib
    import inspect
    import pkgutil

    import jaxclust

    seen = 0
    for info in pkgutil.walk_packages(jaxclust.__path__, "jaxclust."):
        if ".apps" in info.name:
            continue
        mod = importlib.import_module(info.name)
        for cls in vars(mod).values():
            if (
                inspect.isclass(cls)
                and cls.__module__ == mod.__name__
                and "_parameter_constraints" in vars(cls)
            ):
                args = set(inspect.signature(cls.__init__).parameters)
                assert set(cls._parameter_constraints) <= args, cls.__name__
                seen += 1
    assert seen >= 9  # KMeans, COP/PCKMeans, GaussianMixture, the query baselines, ITML, ICC, L3M
