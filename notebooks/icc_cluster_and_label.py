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
# # Cluster and label with ICC
#
# **Running it.** Top to bottom on a CPU it takes a few minutes at most, most of it JAX compiling. On
# [Colab](https://colab.research.google.com/github/jaxclust/jaxclust/blob/main/notebooks/icc_cluster_and_label.ipynb)
# the next cell installs jaxclust from GitHub. A GPU runtime is optional (*Runtime → Change runtime type → T4
# GPU*, or any GPU): Colab's JAX is the CUDA build and uses the GPU as is (`jax.devices()` lists it). A GPU pays
# off on large data (the DPMM's sub-cluster sampler, k-means on millions of points), not on the small examples
# here, where compiling dominates; on your own machine, install JAX's CUDA build first (`pip install -U
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
# Iterative constrained clustering (Akkaya, Wiebe & Mihalcea 2014): cluster, ask the label of each cluster's
# prototype, then repeatedly learn an ITML metric from cannot-links between opposing labels, recluster with
# Klein et al.'s constrained complete link, and ask the instance with the lowest *silh_const*. Finally every
# cluster's label is propagated to its members.
#
# Uses the SENSEVAL-2 word *interest* when the evaluation data is available (`JAXCLUST_DATA`), otherwise
# scikit-learn's digits.

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt  # the kernel's inline backend shows the figure
import numpy as np
from sklearn.decomposition import TruncatedSVD

from jaxclust.icc import ICC

data = os.environ.get("JAXCLUST_DATA") or str(Path("..").resolve().parent / "shared" / "data")
if Path(data, "senseval2_nltk").is_dir():
    from jaxclust.datasets import load_senseval2
    from jaxclust.text import LocalFeatures

    ds = load_senseval2("interest", data)
    idx = np.sort(np.random.default_rng(0).choice(len(ds.texts), 300, replace=False))
    tok, pos, head = ds.extra["tokens"], ds.extra["pos"], ds.extra["head_index"]
    inst = [(tok[i], pos[i], int(head[i])) for i in idx]
    local = LocalFeatures(min_count=2).fit_transform(inst)
    X = TruncatedSVD(20, random_state=0).fit_transform(local)
    y = np.asarray(ds.labels["sense"])[idx]
    name = "SENSEVAL-2 interest (300 instances)"
else:
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    name = "digits (300 images)"
print(name, X.shape, "majority label share", np.bincount(y).max() / len(y))

# %% [markdown]
# Run ICC (silh_const selection, with and without metric learning) and random selection for the same budget,
# recording the purity of the generated labels along the way.

# %%
budgets = [10, 20, 30, 45]
curves = {}
for strategy, ml in [("silh_const", True), ("silh_const", False), ("random", False)]:
    icc = ICC(n_clusters=7, strategy=strategy, metric_learning=ml, budget=max(budgets), checkpoints=budgets,
              batch_size=3, max_iter=20, n_components=None, random_state=0).fit(X, y)
    key = strategy + ("+ML" if ml else "")
    curves[key] = [round(float(np.mean(icc.history_[b] == y)), 3) for b in budgets]
curves

# %%
fig, ax = plt.subplots(figsize=(5, 3.2))
for k, v in curves.items():
    ax.plot(100 * np.asarray(budgets) / len(y), v, marker="o", label=k)
ax.set_xlabel("% of instances labelled")
ax.set_ylabel("purity of generated labels")
ax.set_title(name)
ax.legend()
fig.tight_layout()

# %% [markdown]
# The last run's propagated labels carry weights for a downstream classifier: 1 for asked instances, silh_const
# mapped to [0, 1] for propagated ones.

# %%
from jaxclust.icc.cluster_and_label import train_on_generated

clf = train_on_generated(X, icc.labels_, icc.sample_weight_, kind="logreg")
print("labels asked:", len(icc.queried_), " purity of generated labels:", np.mean(icc.labels_ == y))
print("training accuracy against gold:", np.mean(clf.predict(X) == y))
