"""Applications built on the library: what an annotation session reads and shows.

* :mod:`jaxclust.apps.items`: the items of a session from a file (CSV of numbers or of texts, a ``.txt`` file
  with one text per line, JSON lines, a ``.npy`` matrix of embeddings) or from Python lists and arrays;
* :mod:`jaxclust.apps.features`: their feature matrix, saved with the answer store so that a resumed session
  uses exactly the same features;
* :mod:`jaxclust.apps.notebook`: the notebook annotator (ipywidgets; ``pip install "jaxclust[notebooks]"``).

``jaxclust annotate`` (:mod:`jaxclust.annotate`) and the notebook annotator share these, so a session started in
one can be resumed in the other. The library packages (``jaxclust.active``, ``jaxclust.dpmm``, ...) never
import this package.
"""

__all__: list[str] = []
