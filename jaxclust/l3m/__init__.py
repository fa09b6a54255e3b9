"""L3M: the latent left-linking model for supervised online clustering (Samdani, Chang & Roth, ICML 2014).

Functional core (pure JAX): :mod:`~jaxclust.l3m.model` (equinox scorers), :mod:`~jaxclust.l3m.loss`
(gamma-scaled likelihood), :mod:`~jaxclust.l3m.train` (optax steps), :mod:`~jaxclust.l3m.infer` (greedy /
best-left-link), :mod:`~jaxclust.l3m.constraints` (CL3M); host side: :mod:`~jaxclust.l3m.document` (padded
batches) and :mod:`~jaxclust.l3m.features` (coreference and post features). :class:`L3M` is the estimator.
"""

from jaxclust.l3m.document import DocBatch, Document, pad_batch
from jaxclust.l3m.estimator import L3M
from jaxclust.l3m.model import LinearScorer, MLPScorer

__all__ = ["L3M", "Document", "DocBatch", "pad_batch", "LinearScorer", "MLPScorer"]
