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
# # Active clustering of texts in a notebook
#
# **Running it.** Top to bottom on a CPU it takes a few minutes at most, most of it JAX compiling. On
# [Colab](https://colab.research.google.com/github/jaxclust/jaxclust/blob/main/notebooks/active_annotation.ipynb)
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
# Texts in, a few human answers out: the notebook annotator asks *do these two texts belong together?* about the
# pair the model is least sure of, stores every answer durably, and shows the clustering as it learns. Here a
# simulated annotator (gold labels with 10% wrong answers) clicks the buttons by code, so the notebook runs top
# to bottom; open it in Jupyter or Colab and click them yourself.

# %%
import jaxclust

try:  # Colab shows ipywidgets 8 (preinstalled there) through its custom widget manager
    from google.colab import output

    output.enable_custom_widget_manager()
except ImportError:
    pass
print('jaxclust', jaxclust.__version__)

# %%
# %matplotlib inline
import tempfile
from pathlib import Path

import jax
import matplotlib.pyplot as plt  # the kernel's inline backend shows the figures
import numpy as np

from jaxclust import DPMM
from jaxclust.active import AnswerStore, NoisyOracle
from jaxclust.apps.notebook import NotebookAnnotator
from jaxclust.text import TextFeaturizer

print('JAX devices:', jax.devices())

# %% [markdown]
# ## A small text collection
# Twenty-four short texts on three topics, made up here (no download): four topic words, three filler words and
# one word common to all topics per text. One text per line in a `.txt` file, the format `jaxclust annotate`
# reads. `y` holds the topics, used only to simulate the annotator and to score the clustering.

# %%
TOPICS = {
    'sport': 'match goal team coach season league striker referee stadium score player win'.split(),
    'cooking': 'recipe oven flour butter sauce garlic onion bake simmer pepper dough kitchen'.split(),
    'weather': 'rain storm cloud wind forecast sunny snow thunder humid cold breeze temperature'.split(),
}
FILLER = 'the a this that today really very quite just some new old big small good'.split()
SHARED = 'day week hot great time people long early late next'.split()  # in every topic
rng = np.random.default_rng(0)
texts, y = [], []
for topic, words in enumerate(TOPICS.values()):
    for _ in range(8):
        w = [*rng.choice(words, size=4, replace=False), *rng.choice(FILLER, size=3), rng.choice(SHARED)]
        rng.shuffle(w)
        texts.append(' '.join(w).capitalize() + '.')
        y.append(topic)
y = np.array(y)
work = Path(tempfile.mkdtemp(prefix='jaxclust_annotation_'))
data = work / 'texts.txt'
data.write_text('\n'.join(texts) + '\n')
print(len(texts), 'texts, e.g.:', *texts[::8], sep='\n  ')

# %% [markdown]
# ## Texts to features
# The default featuriser needs no download: TF-IDF, then truncated SVD with `min(100, ceil(sqrt(n)), n - 1,
# words - 1)` dimensions, then every dimension standardised, with a fixed seed. It is a scikit-learn
# transformer; the annotator runs it once and saves the matrix beside the answer store, so a resumed session
# uses exactly these numbers.

# %%
X = TextFeaturizer().fit_transform(texts)
print('features:', X.shape, ' column means ~0:', np.allclose(X.mean(axis=0), 0))

# %% [markdown]
# ## The annotator
# The widget shows the two texts, the buttons *Same cluster*, *Different*, *Don't know* and *Undo*, the progress
# and a live figure: the texts projected on two principal components, coloured by the current clusters, the pair
# asked ringed, must-links green, cannot-links red. With `gold` labels it also draws V-beta against the number
# of answers. Small sampler settings keep this notebook quick; the first fit also compiles the sampler (10-20
# s).

# %%
store = work / 'answers.sqlite'
model = DPMM(n_chains=2, n_burnin=20, n_samples=5, thin=3, random_state=0)
annotator = NotebookAnnotator(data, store=store, n_queries=10, model=model, gold=y, annotator='notebook')
annotator

# %% [markdown]
# ## A simulated annotator clicks the buttons
# `answer('must')`, `answer('cannot')`, `answer('unknown')` and `undo()` are what the buttons call. The
# simulated person is right 90% of the time; after a few answers we also give one answer on purpose wrong and
# undo it: the undo is written to the store (nothing is deleted) and the same question comes back.

# %%
person = NoisyOracle(y, flip_rate=0.1, random_state=0)
for _ in range(4):
    annotator.answer(person(*annotator.question))
slip = annotator.question
annotator.answer('cannot' if y[slip[0]] == y[slip[1]] else 'must')  # wrong on purpose
annotator.undo()
print(annotator.message)
assert annotator.question == slip  # asked again
while annotator.question is not None:
    annotator.answer(person(*annotator.question))
print(annotator.message)

# %% [markdown]
# ## The clustering and its quality
# The annotator's figure, then V-beta (the clustering against the topics; 1 is perfect) after each round of
# answers. The store holds every answer, the undone one included, with who gave it.

# %%
annotator.figure()

# %%
answers, quality = zip(*annotator.curve_)  # V-beta after each round, against the answers so far
fig, ax = plt.subplots(figsize=(4.5, 3))
ax.plot(answers, quality, marker='o')
ax.set_xlabel('answers')
ax.set_ylabel('V-beta')
ax.set_ylim(0, 1.02)
plt.show()
print('V-beta:', [(n, round(v, 3)) for n, v in annotator.curve_])
annotator.close()  # every answer is already saved; closing releases the store for the command line
with AnswerStore(store) as s:
    for a in s.all_answers:
        print(a['id'], a['i'], a['j'], a['answer'], a['annotator'], 'UNDONE' if a['undone'] else '')

# %% [markdown]
# ## The same session from the command line, and several annotators
# The store is the one `jaxclust annotate` uses. With the same options the command line resumes exactly where
# the notebook stopped (and the other way round), e.g. with ten more questions:
#
# ```bash
# jaxclust annotate texts.txt --store answers.sqlite --n-queries 20 --n-chains 2 --n-burnin 20 --n-samples 5
# ```
#
# Several people can work on one SQLite store at once: `NotebookAnnotator(..., shared=True, annotator='ana')`
# here, `--shared --annotator ana` there. Each gets questions nobody else holds, every answer is kept with its
# author, and contradicting answers are reported naming who gave them.
