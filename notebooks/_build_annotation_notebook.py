# ruff: noqa: E501
"""Build notebooks/active_annotation.ipynb (no outputs stored). Run: python notebooks/_build_annotation_notebook.py"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Active clustering of texts in a notebook\n\n"
        "Texts in, a few human answers out: the notebook annotator asks *do these two texts belong together?* "
        "about the pair the model is least sure of, stores every answer durably, and shows the clustering as it "
        "learns. Here a simulated annotator (gold labels with 10% wrong answers) clicks the buttons by code, so "
        "the notebook runs top to bottom; open it in Jupyter or Colab and click them yourself.\n\n"
        "The first cell installs jaxclust (with ipywidgets) when it is not installed, so this notebook runs on "
        "Colab as is."
    ),
    new_code_cell(
        "try:\n"
        "    import jaxclust\n"
        "except ImportError:  # e.g. on Colab: install jaxclust with the notebook extra (ipywidgets)\n"
        '    %pip install -q "jaxclust[notebooks] @ git+https://github.com/jaxclust/jaxclust"\n'
        "    import jaxclust\n"
        "try:  # Colab shows ipywidgets 8 through its custom widget manager\n"
        "    from google.colab import output\n\n"
        "    output.enable_custom_widget_manager()\n"
        "except ImportError:\n"
        "    pass\n"
        "print('jaxclust', jaxclust.__version__)"
    ),
    new_markdown_cell(
        "**CPU or GPU?** This notebook is small and runs on a CPU runtime in well under a minute. For thousands "
        "of items, pick a GPU: on Colab *Runtime > Change runtime type > T4 GPU* (Colab's JAX already has CUDA); "
        'elsewhere install JAX\'s CUDA build first (`%pip install -U "jax[cuda12]"`). `jax.devices()` says '
        "which devices JAX uses."
    ),
    new_code_cell(
        "%matplotlib inline\n"
        "import tempfile\n"
        "from pathlib import Path\n\n"
        "import jax\n"
        "import matplotlib.pyplot as plt  # the kernel's inline backend shows the figures\n"
        "import numpy as np\n\n"
        "from jaxclust import DPMM\n"
        "from jaxclust.active import AnswerStore, NoisyOracle\n"
        "from jaxclust.apps.notebook import NotebookAnnotator\n"
        "from jaxclust.text import TextFeaturizer\n\n"
        "print('JAX devices:', jax.devices())"
    ),
    new_markdown_cell(
        "## A small text collection\n"
        "Twenty-four short texts on three topics, made up here (no download): four topic words, three filler "
        "words and one word common to all topics per text. One text per line in a `.txt` file, the format `jaxclust annotate` reads. `y` "
        "holds the topics, used only to simulate the annotator and to score the clustering."
    ),
    new_code_cell(
        "TOPICS = {\n"
        "    'sport': 'match goal team coach season league striker referee stadium score player win'.split(),\n"
        "    'cooking': 'recipe oven flour butter sauce garlic onion bake simmer pepper dough kitchen'.split(),\n"
        "    'weather': 'rain storm cloud wind forecast sunny snow thunder humid cold breeze temperature'.split(),\n"
        "}\n"
        "FILLER = 'the a this that today really very quite just some new old big small good'.split()\n"
        "SHARED = 'day week hot great time people long early late next'.split()  # in every topic\n"
        "rng = np.random.default_rng(0)\n"
        "texts, y = [], []\n"
        "for topic, words in enumerate(TOPICS.values()):\n"
        "    for _ in range(8):\n"
        "        w = [*rng.choice(words, size=4, replace=False), *rng.choice(FILLER, size=3), rng.choice(SHARED)]\n"
        "        rng.shuffle(w)\n"
        "        texts.append(' '.join(w).capitalize() + '.')\n"
        "        y.append(topic)\n"
        "y = np.array(y)\n"
        "work = Path(tempfile.mkdtemp(prefix='jaxclust_annotation_'))\n"
        "data = work / 'texts.txt'\n"
        "data.write_text('\\n'.join(texts) + '\\n')\n"
        "print(len(texts), 'texts, e.g.:', *texts[::8], sep='\\n  ')"
    ),
    new_markdown_cell(
        "## Texts to features\n"
        "The default featuriser needs no download: TF-IDF, then truncated SVD with "
        "`min(100, ceil(sqrt(n)), n - 1, words - 1)` dimensions, then every dimension standardised, with a fixed "
        "seed. It is a scikit-learn transformer; the annotator runs it once and saves the matrix beside the "
        "answer store, so a resumed session uses exactly these numbers."
    ),
    new_code_cell(
        "X = TextFeaturizer().fit_transform(texts)\nprint('features:', X.shape, ' column means ~0:', np.allclose(X.mean(axis=0), 0))"
    ),
    new_markdown_cell(
        "## The annotator\n"
        "The widget shows the two texts, the buttons *Same cluster*, *Different*, *Don't know* and *Undo*, the "
        "progress and a live figure: the texts projected on two principal components, coloured by the current "
        "clusters, the pair asked ringed, must-links green, cannot-links red. With `gold` labels it also draws "
        "V-beta against the number of answers. Small sampler settings keep this notebook quick; the first fit "
        "also compiles the sampler (10-20 s)."
    ),
    new_code_cell(
        "store = work / 'answers.sqlite'\n"
        "model = DPMM(n_chains=2, n_burnin=20, n_samples=5, thin=3, random_state=0)\n"
        "annotator = NotebookAnnotator(data, store=store, n_queries=10, model=model, gold=y, annotator='notebook')\n"
        "annotator"
    ),
    new_markdown_cell(
        "## A simulated annotator clicks the buttons\n"
        "`answer('must')`, `answer('cannot')`, `answer('unknown')` and `undo()` are what the buttons call. The "
        "simulated person is right 90% of the time; after a few answers we also give one answer on purpose "
        "wrong and undo it: the undo is written to the store (nothing is deleted) and the same question comes "
        "back."
    ),
    new_code_cell(
        "person = NoisyOracle(y, flip_rate=0.1, random_state=0)\n"
        "for _ in range(4):\n"
        "    annotator.answer(person(*annotator.question))\n"
        "slip = annotator.question\n"
        "annotator.answer('cannot' if y[slip[0]] == y[slip[1]] else 'must')  # wrong on purpose\n"
        "annotator.undo()\n"
        "print(annotator.message)\n"
        "assert annotator.question == slip  # asked again\n"
        "while annotator.question is not None:\n"
        "    annotator.answer(person(*annotator.question))\n"
        "print(annotator.message)"
    ),
    new_markdown_cell(
        "## The clustering and its quality\n"
        "The annotator's figure, then V-beta (the clustering against the topics; 1 is perfect) after each round "
        "of answers. The store holds every answer, the undone one included, with who gave it."
    ),
    new_code_cell("annotator.figure()"),
    new_code_cell(
        "answers, quality = zip(*annotator.curve_)  # V-beta after each round, against the answers so far\n"
        "fig, ax = plt.subplots(figsize=(4.5, 3))\n"
        "ax.plot(answers, quality, marker='o')\n"
        "ax.set_xlabel('answers')\n"
        "ax.set_ylabel('V-beta')\n"
        "ax.set_ylim(0, 1.02)\n"
        "plt.show()\n"
        "print('V-beta:', [(n, round(v, 3)) for n, v in annotator.curve_])\n"
        "annotator.close()  # every answer is already saved; closing releases the store for the command line\n"
        "with AnswerStore(store) as s:\n"
        "    for a in s.all_answers:\n"
        "        print(a['id'], a['i'], a['j'], a['answer'], a['annotator'], 'UNDONE' if a['undone'] else '')"
    ),
    new_markdown_cell(
        "## The same session from the command line, and several annotators\n"
        "The store is the one `jaxclust annotate` uses. With the same options the command line resumes exactly "
        "where the notebook stopped (and the other way round), e.g. with ten more questions:\n\n"
        "```bash\n"
        "jaxclust annotate texts.txt --store answers.sqlite --n-queries 20 --n-chains 2 --n-burnin 20 --n-samples 5\n"
        "```\n\n"
        "Several people can work on one SQLite store at once: `NotebookAnnotator(..., shared=True, "
        "annotator='ana')` here, `--shared --annotator ana` there. Each gets questions nobody else holds, every "
        "answer is kept with its author, and contradicting answers are reported naming who gave them."
    ),
]

nb = new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
path = Path(__file__).resolve().parent / "active_annotation.ipynb"
nbformat.write(nb, path)
print("wrote", path)
