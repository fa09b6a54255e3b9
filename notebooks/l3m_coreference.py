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
# # L3M on LitBank coreference
#
# **Running it.** Top to bottom on a CPU it takes a few minutes at most, most of it JAX compiling. On
# [Colab](https://colab.research.google.com/github/jaxclust/jaxclust/blob/main/notebooks/l3m_coreference.ipynb)
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
# The latent left-linking model (Samdani, Chang & Roth 2014): mentions arrive left to right, each links to an
# earlier mention with probability $\propto \exp(w\cdot\phi(i,j)/\gamma)$ or starts a new entity. We train on a
# slice of LitBank (gold mentions), look at the entities found in one passage, and compare temperatures
# $\gamma$. Without the data directory the notebook falls back to small synthetic documents.

# %%
import os
from pathlib import Path

import numpy as np

from jaxclust.l3m import L3M, Document
from jaxclust.l3m.features import coref_features
from jaxclust.metrics.coref import clusters_from_labels, corpus_scores

for cand in [os.environ.get('JAXCLUST_DATA'), '../../shared/data', '../shared/data']:
    if cand and Path(cand, 'coref', 'litbank').is_dir():
        os.environ['JAXCLUST_DATA'] = str(Path(cand).resolve())
        break
HAVE_DATA = Path(os.environ.get('JAXCLUST_DATA', '/nonexistent'), 'coref', 'litbank').is_dir()
WINDOW = 32
if HAVE_DATA:
    from jaxclust.datasets import load_litbank
    train_c, dev_c = load_litbank('train')[:6], load_litbank('dev')[:3]
    train = [Document(coref_features(d, WINDOW), d.entities, None, d.doc_id) for d in train_c]
    dev = [Document(coref_features(d, WINDOW), d.entities, None, d.doc_id) for d in dev_c]
else:  # synthetic stand-in: a noisy 'same entity' cue plus noise
    rng = np.random.default_rng(0)
    def synth(m):
        c = rng.integers(0, 6, m)
        same = (c[:, None] == c[None]) ^ (rng.random((m, m)) < 0.1)
        return Document.from_pairwise(np.stack([same, rng.random((m, m))], -1).astype(np.float32), c,
                                      max_antecedents=WINDOW)
    train, dev, dev_c = [synth(60) for _ in range(6)], [synth(60) for _ in range(3)], None
LR = 0.05 if HAVE_DATA else 0.5
print('data:', 'LitBank' if HAVE_DATA else 'synthetic', '| train docs', len(train),
      '| features', train[0].n_features)


# %%
def conll(model, docs):
    keys = [clusters_from_labels(d.clusters) for d in docs]
    return 100 * corpus_scores(keys, [clusters_from_labels(p) for p in model.predict_many(docs)])['conll_f1']

model = L3M(gamma=0.5, threshold=0.4, optimizer='adam', learning_rate=LR, n_epochs=4, batch_size=8)
model.fit(train)
print('train loss by epoch', np.round(model.history_['train_loss'], 3))
print(f'dev CoNLL F1 {conll(model, dev):.1f}')

# %% [markdown]
# ## Entities found in one passage (first 60 mentions of a dev document, multi-mention entities)

# %%
labels = model.predict(dev[0])
if HAVE_DATA:
    ms = dev_c[0].mentions[:60]
    groups = {}
    for m, z in zip(ms, labels[:60]):
        groups.setdefault(z, []).append(m.text)
    for z, texts in groups.items():
        if len(texts) > 1:
            print(z, ' | '.join(texts))
else:
    print('predicted', labels[:30])
    print('gold     ', dev[0].clusters[:30])

# %% [markdown]
# ## Effect of the temperature $\gamma$
#
# $\gamma$ is a traced array inside the jitted training step, so these fits reuse one compiled function.
# $\gamma=0$ is best-left-link (a latent structural SVM); $\gamma=1$ a hidden-variable CRF.

# %%
for g in (0.0, 0.25, 1.0):
    m = L3M(gamma=g, threshold=0.4, optimizer='adam', learning_rate=LR, n_epochs=4, batch_size=8).fit(train)
    print(f'gamma={g:<5} dev CoNLL F1 = {conll(m, dev):.1f}')
