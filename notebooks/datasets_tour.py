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
# # A tour of `jaxclust.datasets`
#
# **Running it.** Top to bottom on a CPU it takes a few minutes at most, most of it JAX compiling. On
# [Colab](https://colab.research.google.com/github/jaxclust/jaxclust/blob/main/notebooks/datasets_tour.ipynb)
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
# Loaders return a `Dataset` record (features or texts, gold labelings by name, item names, source and licence)
# or, for coreference, a list of `CorefDocument`s. scikit-learn's bundled sets (iris, wine, digits) are the
# embedded default; the evaluation corpora are read from a data directory (`data_dir=` or the `JAXCLUST_DATA`
# environment variable) because their licences forbid shipping them.

# %%
import os
from pathlib import Path

import numpy as np

from jaxclust import datasets as D
from jaxclust.errors import DatasetNotFoundError

# here the shared data sits beside the checkout; elsewhere set JAXCLUST_DATA yourself
if 'JAXCLUST_DATA' not in os.environ and Path('../../shared/data').is_dir():
    os.environ['JAXCLUST_DATA'] = str(Path('../../shared/data').resolve())

iris = D.load_iris()
print(iris)
print(iris.feature_names, iris.label_names['class'])
print('class sizes', np.bincount(iris.y), '| licence:', iris.license)

# %% [markdown]
# ## Verb classes from subcategorization frames
#
# The balanced general-English set has 46 VerbNet classes x 12 verbs; every labeling is kept (`root_class`,
# `root_number`, `levin_top`) and `target` names the one `y` returns. A missing data folder raises
# `DatasetNotFoundError` naming the folder and files expected.

# %%
try:
    verbs = D.load_verbs_general('balanced', label='root_class')
except DatasetNotFoundError as err:
    verbs = None
    print(err)
if verbs is not None:
    print(verbs)
    print(verbs.item_names[:6], verbs.feature_names[:6])
    print({k: len(v) for k, v in verbs.label_names.items()})

# %% [markdown]
# A quick signal check: k-means on the square-rooted frame distributions against random clusterings of the same
# class sizes (the data README reports purity 0.24 / NMI 0.44 against 0.155 / 0.39).

# %%
from sklearn.cluster import KMeans

from jaxclust.metrics import normalized_mutual_info, purity

if verbs is not None:
    z = KMeans(n_clusters=verbs.n_classes, n_init=1, random_state=0).fit_predict(np.sqrt(verbs.X))
    r = np.random.default_rng(0).permutation(verbs.y)
    for name, labels in (('k-means', z), ('random ', r)):
        print(f'{name} purity {purity(verbs.y, labels):.3f}  '
              f'NMI {normalized_mutual_info(verbs.y, labels):.3f}')

# %% [markdown]
# ## Coreference documents
#
# `load_litbank(split)` and `load_gum(split)` return documents with gold mentions in left-to-right order (the
# order L3M links them). `doc.entities` is the gold clustering of the mentions; `doc.to_conll(labels)` turns a
# predicted labeling into the metrics' CoNLL document for the coreference scores.

# %%
try:
    docs = D.load_litbank('dev')
except DatasetNotFoundError as err:
    docs = []
    print(err)
if docs:
    doc = docs[0]
    print(doc)
    for m in doc.mentions[:5]:
        print(m.start, m.end, repr(m.text), 'entity', m.entity, m.mention_type, m.entity_type)
    from jaxclust.metrics import corpus_scores

    keys = [d.to_conll().entities() for d in docs]
    singletons = [d.to_conll(np.arange(d.n_mentions)).entities() for d in docs]
    s = corpus_scores(keys, singletons)
    print('all-singletons baseline on dev: CoNLL F1 %.2f' % (100 * s['conll_f1']))
