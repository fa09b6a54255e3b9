"""Lloyd split over several XLA host devices: the same clustering as one device and as scikit-learn.

The device count is fixed when JAX starts, so the multi-device runs happen in a subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``; this process (one device) computes the reference.
Sums are added in another order across devices, so centres and inertia are compared to float tolerance and the
labels exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs

from jaxclust.kmeans import KMeans, lloyd


def _lloyd_cases():
    """(name, X, init, chunk, sklearn-comparable) for the core: chunk counts that do not split evenly over 2 or
    4 devices, one chunk only (the other devices hold padding only), k >= 32 (the other classify path), and
    two empty clusters after the first step (relocation)."""
    X, _ = make_blobs(1003, 5, centers=6, cluster_std=1.5, random_state=3)
    empty = X[:7].copy()
    empty[1] = empty[4] = 1e3
    X40, _ = make_blobs(2501, 8, centers=30, cluster_std=1.0, random_state=4)
    return [
        ("11 chunks, float64", X, X[:7], 100),
        ("one chunk, float64", X, X[:7], None),
        ("empty clusters, float64", X, empty, 100),
        ("k=40, 27 chunks, float32", X40.astype(np.float32), X40[:40].astype(np.float32), 96),
    ]


def run_cases():
    """Every case on this process's devices; JSON-ready (floats repr round-trip exactly)."""
    out = {"devices": jax.device_count(), "lloyd": {}, "estimator": {}}
    for name, X, init, chunk in _lloyd_cases():
        with jax.enable_x64(X.dtype == np.float64):
            r = lloyd(jnp.asarray(X), jnp.asarray(init), tol=0.0, max_iter=50, chunk=chunk)
            out["lloyd"][name] = dict(
                labels=np.asarray(r.labels).tolist(),
                centers=np.asarray(r.centers, np.float64).tolist(),
                inertia=float(r.inertia),
                n_iter=int(r.n_iter),
            )
    # An input pinned to one device (committed) runs the single-device path instead of failing in jit.
    _name, X, init, chunk = _lloyd_cases()[0]
    with jax.enable_x64(True):
        r = lloyd(jax.device_put(X, jax.devices()[-1]), jnp.asarray(init), tol=0.0, max_iter=50, chunk=chunk)
        out["lloyd"]["pinned"] = dict(labels=np.asarray(r.labels).tolist(), inertia=float(r.inertia))
    # Estimator: restarts under vmap, k-means++ and random init, 300 rows padded to 512 (n_valid).
    X, _ = make_blobs(300, 4, centers=5, cluster_std=2.0, random_state=5)
    for init in ("k-means++", "random"):
        m = KMeans(5, init=init, n_init=3, random_state=0).fit(X)
        out["estimator"][init] = dict(labels=m.labels_.tolist(), inertia=m.inertia_, n_iter=m.n_iter_)
    return out


@pytest.fixture(scope="module")
def single():
    assert jax.device_count() == 1
    return run_cases()


@pytest.mark.parametrize("n_devices", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_lloyd_on_host_devices_matches_one_device_and_sklearn(single, n_devices):
    code = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import jaxclust.kmeans.host_devices as hd
        from test_kmeans_devices import run_cases
        assert hd.lloyd_mesh() is not None and hd.lloyd_mesh().size == {n_devices}
        small = hd.can_split(1003 * 5 * 7)  # below the work threshold: one device
        hd.SPLIT_MIN_WORK = 0  # split every case below, however small
        out = run_cases()
        out["small_split"] = small
        print(json.dumps(out))
    """)
    env = dict(
        os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={n_devices}", JAX_PLATFORMS="cpu"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["devices"] == n_devices
    assert got["small_split"] is False

    for name, X, init, _chunk in _lloyd_cases():
        g, s = got["lloyd"][name], single["lloyd"][name]
        rtol = 1e-5 if X.dtype == np.float32 else 1e-12
        np.testing.assert_array_equal(g["labels"], s["labels"], err_msg=name)
        assert g["n_iter"] == s["n_iter"], name
        np.testing.assert_allclose(g["centers"], s["centers"], rtol=rtol, atol=rtol, err_msg=name)
        assert g["inertia"] == pytest.approx(s["inertia"], rel=rtol), name
        ref = SKKMeans(init.shape[0], init=init, n_init=1, tol=0.0, max_iter=50).fit(X)
        np.testing.assert_array_equal(g["labels"], ref.labels_, err_msg=name)
        assert g["inertia"] == pytest.approx(ref.inertia_, rel=rtol), name
        if "empty" in name:
            assert len(np.unique(g["labels"])) == init.shape[0]

    # pinned to one device: the one-device path, bit for bit
    assert got["lloyd"]["pinned"] == single["lloyd"]["pinned"]
    assert got["lloyd"]["pinned"]["labels"] == single["lloyd"]["11 chunks, float64"]["labels"]

    for init in ("k-means++", "random"):
        g, s = got["estimator"][init], single["estimator"][init]
        np.testing.assert_array_equal(g["labels"], s["labels"], err_msg=init)
        assert g["inertia"] == pytest.approx(s["inertia"], rel=1e-12), init
        assert g["n_iter"] == s["n_iter"], init
