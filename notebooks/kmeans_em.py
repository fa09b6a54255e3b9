# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # k-means and EM, step by step
#
# **Running it.** Top to bottom on a CPU it takes a few minutes at most, most of it JAX compiling. On
# [Colab](https://colab.research.google.com/github/jaxclust/jaxclust/blob/main/notebooks/kmeans_em.ipynb) the
# next cell installs jaxclust from GitHub. A GPU runtime is optional (*Runtime → Change runtime type → T4 GPU*,
# or any GPU): Colab's JAX is the CUDA build and uses the GPU as is (`jax.devices()` lists it). A GPU pays off
# on large data (the DPMM's sub-cluster sampler, k-means on millions of points), not on the small examples here,
# where compiling dominates; on your own machine, install JAX's CUDA build first (`pip install -U
# "jax[cuda12]"`).

# %%
# Install jaxclust when it is not importable (on Colab, or any fresh environment); nothing happens otherwise.
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("jaxclust") is None:
    url = "git+https://github.com/jaxclust/jaxclust"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"jaxclust @ {url}"], check=True)

# %% [markdown]
# Elsner's lecture *Unsupervised learning: clustering*, on real 2-D data: sepal length and petal length of
# scikit-learn's iris flowers. k-means alternates a **classify** step (each point to its closest centre) and an
# **estimate** step (each centre to the mean of its points). Each step can only lower the sum of squared
# distances, but the algorithm can stop in a **local minimum**. Read probabilistically (P(x | c) ∝ exp(-‖x -
# c‖²), uniform P(c)) k-means maximises a joint likelihood; **EM** replaces the hard classify step by soft
# responsibilities.

# %%
import jax.numpy as jnp
import matplotlib.pyplot as plt  # the kernel's inline backend draws the figures (headless too)
import numpy as np
from sklearn.datasets import load_iris

from jaxclust.kmeans import KMeans, assign, lloyd
from jaxclust.kmeans.mixture import GaussianMixture, soft_kmeans

iris = load_iris()
X = iris.data[:, [0, 2]]  # sepal length, petal length (cm)
y = iris.target
Xj = jnp.asarray(X, jnp.float32)
print(X.shape, "gold classes:", iris.target_names)

# %% [markdown]
# ## Classify, estimate, repeat
#
# Start from three random flowers as centres. Each row of panels is one iteration: first the classify step
# (colours = closest centre), then the estimate step (centres move to the means, arrows).

# %%
rng = np.random.default_rng(3)
centers = X[rng.choice(len(X), 3, replace=False)]
fig, axes = plt.subplots(2, 3, figsize=(12, 7), sharex=True, sharey=True)
for it, ax in enumerate(axes.ravel()):
    labels, _ = assign(Xj, jnp.asarray(centers, jnp.float32))  # classify
    new = lloyd(Xj, jnp.asarray(centers, jnp.float32), max_iter=1).centers  # estimate (one Lloyd step)
    new = np.asarray(new)
    ax.scatter(X[:, 0], X[:, 1], c=np.asarray(labels), cmap="viridis", s=12)
    for a, b in zip(centers, new):
        ax.annotate("", xy=b, xytext=a, arrowprops=dict(arrowstyle="->", color="red"))
    ax.scatter(*centers.T, marker="x", c="red", s=80)
    inertia = ((X - centers[np.asarray(labels)]) ** 2).sum()
    ax.set_title(f"iteration {it + 1}: inertia {inertia:.1f}")
    centers = new
fig.supxlabel("sepal length (cm)")
fig.supylabel("petal length (cm)")
plt.tight_layout()

# %% [markdown]
# ## A local minimum from a bad start
#
# Put two of the three starting centres among the small *setosa* flowers: Lloyd's iterations converge, but to a
# local minimum (setosa split in two, the other two species merged), far worse than k-means++ with restarts.

# %%
bad = KMeans(3, init=np.array([[5.0, 1.4], [5.5, 1.4], [6.1, 4.0]]), n_init=1).fit(X)
good = KMeans(3, n_init=10, random_state=0).fit(X)
print(f"bad start: inertia {bad.inertia_:.2f} after {bad.n_iter_} iterations")
print(f"k-means++, 10 restarts: inertia {good.inertia_:.2f}")
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, m, title in zip(axes, (bad, good), ("bad start: local minimum", "k-means++ (best of 10)")):
    ax.scatter(X[:, 0], X[:, 1], c=m.labels_, cmap="viridis", s=12)
    ax.scatter(*m.cluster_centers_.T, marker="x", c="red", s=80)
    ax.set_title(f"{title}, inertia {m.inertia_:.1f}")
plt.tight_layout()

# %% [markdown]
# ## EM: soft assignments
#
# A Gaussian mixture (full covariances) fitted by EM. Colour = responsibilities mixed as RGB: points between two
# components get blended colours. The log-likelihood trace never decreases. Soft k-means (the seed's isotropic
# model with stiffness β) shows how the responsibilities harden as β grows.

# %%
gm = GaussianMixture(3, covariance_type="full", random_state=0).fit(X)
R = gm.predict_proba(X)
print("log-likelihood per iteration:", np.round(gm.lower_bounds_, 4))
print("never decreases:", bool(np.all(np.diff(gm.lower_bounds_) >= -1e-9)))
fig, axes = plt.subplots(1, 3, figsize=(14, 4), sharey=True)
axes[0].scatter(X[:, 0], X[:, 1], c=R[:, [0, 1, 2]], s=14)
axes[0].scatter(*gm.means_.T, marker="x", c="k", s=80)
axes[0].set_title("GMM responsibilities (RGB)")
for ax, beta in zip(axes[1:], (0.5, 20.0)):
    sk = soft_kmeans(Xj, jnp.asarray(good.cluster_centers_, jnp.float32), beta=beta, max_iter=50)
    r = np.asarray(sk.resp)
    ax.scatter(X[:, 0], X[:, 1], c=r, s=14)
    ax.set_title(f"soft k-means, beta = {beta}: mean max resp {r.max(1).mean():.2f}")
plt.tight_layout()

# %%
from sklearn.metrics import adjusted_rand_score

print("ARI vs species: k-means", round(adjusted_rand_score(y, good.labels_), 3),
      "| GMM", round(adjusted_rand_score(y, gm.labels_), 3))
