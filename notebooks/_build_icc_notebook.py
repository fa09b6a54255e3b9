"""Build notebooks/icc_cluster_and_label.ipynb (no outputs): python notebooks/_build_icc_notebook.py"""

from pathlib import Path

import nbformat as nbf

INTRO = """\
# Cluster and label with ICC

Iterative constrained clustering (Akkaya, Wiebe & Mihalcea 2014): cluster, ask the label of each cluster's
prototype, then repeatedly learn an ITML metric from cannot-links between opposing labels, recluster with
Klein et al.'s constrained complete link, and ask the instance with the lowest *silh_const*. Finally every
cluster's label is propagated to its members.

Uses the SENSEVAL-2 word *interest* when the evaluation data is available (`JAXCLUST_DATA`), otherwise
scikit-learn's digits."""

LOAD = """\
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
print(name, X.shape, "majority label share", np.bincount(y).max() / len(y))"""

RUN = """\
budgets = [10, 20, 30, 45]
curves = {}
for strategy, ml in [("silh_const", True), ("silh_const", False), ("random", False)]:
    icc = ICC(n_clusters=7, strategy=strategy, metric_learning=ml, budget=max(budgets), checkpoints=budgets,
              batch_size=3, max_iter=20, n_components=None, random_state=0).fit(X, y)
    key = strategy + ("+ML" if ml else "")
    curves[key] = [round(float(np.mean(icc.history_[b] == y)), 3) for b in budgets]
curves"""

PLOT = """\
fig, ax = plt.subplots(figsize=(5, 3.2))
for k, v in curves.items():
    ax.plot(100 * np.asarray(budgets) / len(y), v, marker="o", label=k)
ax.set_xlabel("% of instances labelled")
ax.set_ylabel("purity of generated labels")
ax.set_title(name)
ax.legend()
fig.tight_layout()"""

TRAIN = """\
from jaxclust.icc.cluster_and_label import train_on_generated

clf = train_on_generated(X, icc.labels_, icc.sample_weight_, kind="logreg")
print("labels asked:", len(icc.queried_), " purity of generated labels:", np.mean(icc.labels_ == y))
print("training accuracy against gold:", np.mean(clf.predict(X) == y))"""

cells = [
    nbf.v4.new_markdown_cell(INTRO),
    nbf.v4.new_code_cell(LOAD),
    nbf.v4.new_markdown_cell(
        "Run ICC (silh_const selection, with and without metric learning) and random selection for the same "
        "budget, recording the purity of the generated labels along the way."
    ),
    nbf.v4.new_code_cell(RUN),
    nbf.v4.new_code_cell(PLOT),
    nbf.v4.new_markdown_cell(
        "The last run's propagated labels carry weights for a downstream classifier: 1 for asked instances, "
        "silh_const mapped to [0, 1] for propagated ones."
    ),
    nbf.v4.new_code_cell(TRAIN),
]
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
nbf.write(nb, Path(__file__).with_name("icc_cluster_and_label.ipynb"))
