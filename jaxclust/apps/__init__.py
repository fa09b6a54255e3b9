"""The applications built on the library: the command line, the demo, annotation sessions, experiment grids.

* :mod:`jaxclust.apps.cli`: the ``jaxclust`` command (``info``, ``demo``, ``annotate``, ``experiment``);
  :mod:`jaxclust.apps.cli_active` holds the ``demo`` and ``annotate`` commands,
  :mod:`jaxclust.apps.cli_common` the one-line error handling they share;
* :mod:`jaxclust.apps.demo`: ``jaxclust demo``, active vs random constraint selection on the wine data, and the
  curve plots the experiments reuse;
* :mod:`jaxclust.apps.annotate`: ``jaxclust annotate``, an interactive, resumable session on your own data;
* :mod:`jaxclust.apps.items`: the items of a session from a file (CSV of numbers or of texts, a ``.txt`` file
  with one text per line, JSON lines, a ``.npy`` matrix of embeddings) or from Python lists and arrays;
* :mod:`jaxclust.apps.features`: their feature matrix, saved with the answer store so that a resumed session
  uses exactly the same features;
* :mod:`jaxclust.apps.cache`: JAX's compiled programs kept on disk, on by default in every application;
* :mod:`jaxclust.apps.notebook`: the notebook annotator (ipywidgets; ``pip install "jaxclust[notebooks]"``);
* :mod:`jaxclust.apps.experiment`: experiment grids from TOML configs, run locally or on Ray
  (``jaxclust experiment``).

``jaxclust annotate`` and the notebook annotator share the items and features modules, so a session started in
one can be resumed in the other. The library packages (``jaxclust.active``, ``jaxclust.dpmm``,
``jaxclust.kmeans``, ...) never import this package (``tests/test_layout.py`` checks it).
"""

__all__: list[str] = []
