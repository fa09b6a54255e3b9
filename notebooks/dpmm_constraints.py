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
# # Constrained DPMM on the wine data
#
# **Running it.** Top to bottom on a CPU it takes a few minutes at most, most of it JAX compiling. On
# [Colab](https://colab.research.google.com/github/jaxclust/jaxclust/blob/main/notebooks/dpmm_constraints.ipynb)
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
# A Dirichlet process mixture of diagonal Gaussians sampled by collapsed Gibbs (`jaxclust.DPMM`), first without
# supervision, then with must-links and cannot-links derived from the labels of a few wines. Several chains run
# at once; we look at their traces and R-hat.

# %%
import matplotlib.pyplot as plt  # the kernel's inline backend shows the figures
import numpy as np
from sklearn.datasets import load_wine
from sklearn.metrics import adjusted_rand_score, v_measure_score

from jaxclust import DPMM, Constraints

X, y = load_wine(return_X_y=True)
print(X.shape, np.bincount(y))

# %% [markdown]
# ## Unsupervised fit
# `prior=None` uses the documented data-driven Normal-Gamma prior; `alpha_prior` makes the concentration
# inferred (Escobar-West). Short runs keep this notebook fast.

# %%
kw = dict(alpha_prior=(1.0, 1.0), n_chains=4, n_burnin=40, n_samples=15, thin=2, random_state=0)
plain = DPMM(**kw).fit(X)
print('components:', plain.n_components_, ' ARI:', round(adjusted_rand_score(y, plain.labels_), 3),
      ' V:', round(v_measure_score(y, plain.labels_), 3))
print('posterior mean alpha:', plain.alpha_samples_.mean().round(2))

# %% [markdown]
# ## Adding constraints
# We reveal the class of 15 wines and turn every pair among them into a must-link (same class) or a cannot-link
# (different classes). The second fit warm-starts from the first fit's chains; the sampler repairs those states
# to satisfy the constraints before burn-in.

# %%
rng = np.random.default_rng(0)
labelled = rng.choice(len(X), size=15, replace=False)
cons = Constraints.from_labels(y, labelled)
print(len(cons.must_link), 'must-links,', len(cons.cannot_link), 'cannot-links')
guided = DPMM(**kw).fit(X, cons, init_labels=plain.final_labels_)
print('components:', guided.n_components_, ' ARI:', round(adjusted_rand_score(y, guided.labels_), 3),
      ' V:', round(v_measure_score(y, guided.labels_), 3))
assert all(cons.check_assignment(z) == [] for z in guided.samples_)  # every sample obeys every link

# %% [markdown]
# ## Co-clustering probabilities
# `coclustering_[i, j]` is the fraction of samples in which wines i and j share a component (items sorted by
# class).

# %%
order = np.argsort(y, kind='stable')
fig, axes = plt.subplots(1, 2, figsize=(9, 4))
for ax, m, title in zip(axes, [plain, guided], ['no constraints', 'with constraints']):
    ax.imshow(m.coclustering_[np.ix_(order, order)], vmin=0, vmax=1, cmap='viridis')
    ax.set_title(title)
plt.show()

# %% [markdown]
# ## Traces and R-hat
# Label-invariant traces per chain (log joint, number of components, alpha) and the split R-hat / ESS of the
# retained samples (from `numpyro.diagnostics`).

# %%
tr = guided.diagnostics_['traces']
fig, axes = plt.subplots(1, 3, figsize=(12, 3))
for ax, name in zip(axes, ['log_joint', 'n_components', 'alpha']):
    ax.plot(tr[name].T, lw=0.8)
    ax.set_title(name)
    ax.set_xlabel('sweep')
plt.show()
for name in ['log_joint', 'n_components', 'alpha']:
    d = guided.diagnostics_[name]
    print(f"{name:13s} r_hat={d['r_hat']:.3f}  ess={d['ess']:.1f}")

# %% [markdown]
# ## Reading R-hat and ESS
#
# - **R-hat** (split Gelman-Rubin) compares the spread *between* the chains with the spread *within* each chain,
#   each cut in two halves. Close to 1 the chains agree: they have forgotten where they started and explore the
#   same posterior. Above about **1.1** they have not mixed yet, and what the fit reports (`labels_`,
#   `coclustering_`, the number of components) depends on which chain one looks at.
# - **ESS** (effective sample size) is the number of independent draws the retained, autocorrelated samples of
#   all chains are worth. With an ESS of a handful, a probability such as `coclustering_[i, j]` rests on a
#   handful of draws; tens to hundreds make it stable.
#
# When R-hat is above 1.1 (or the ESS is small): run **more sweeps**, a longer burn-in (`n_burnin`) so the
# chains reach the posterior before anything is kept and more retained samples (`n_samples`, `thin`), and **more
# chains** (`n_chains`; they run side by side, vectorised), then read the numbers again. Traces that still drift
# at the end of burn-in say the burn-in is too short. This notebook keeps its runs short so that it executes in
# seconds; treat its numbers as a demonstration, not a converged posterior.
