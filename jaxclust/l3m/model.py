"""Left-link scorers for L3M: ``s_ij = f(phi(i, j))`` for a candidate antecedent ``j < i``, plus a learned
dummy score.

A scorer is an :class:`equinox.Module` with two things the loss and inference need:

* ``scorer(phi)`` maps pair features ``phi`` of shape ``(..., F)`` to scores of shape ``(...)``;
* ``scorer.dummy`` is the (scalar) score of the dummy link "start a new cluster".

Training code only calls these two plus ``l2_penalty()``, so any module with that interface (linear, MLP)
trains
unchanged.

Examples
--------
>>> import jax, jax.numpy as jnp
>>> s = LinearScorer(3)
>>> s(jnp.ones((5, 4, 3))).shape
(5, 4)
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxclust.errors import InvalidInputError

__all__ = ["LinearScorer", "MLPScorer", "make_scorer"]


class LinearScorer(eqx.Module):
    """Linear left-link score ``s_ij = w . phi(i, j)``; the dummy link has its own learned score.

    Parameters
    ----------
    n_features : int
        Width ``F`` of the pair features.
    weight : array (F,), optional
        Initial weights (default zeros).
    dummy : float, optional
        Initial dummy-link score (default 0).
    """

    weight: jax.Array  # (F,)
    dummy: jax.Array  # () score of the dummy ("new cluster") link

    def __init__(self, n_features: int, weight=None, dummy=0.0):
        self.weight = (
            jnp.zeros((n_features,), jnp.float32) if weight is None else jnp.asarray(weight, jnp.float32)
        )
        self.dummy = jnp.asarray(dummy, jnp.float32)

    def __call__(self, phi: jax.Array) -> jax.Array:
        """Scores ``(...)`` of pair features ``phi`` ``(..., F)``."""
        phi = jnp.asarray(phi, jnp.float32)
        # a 2-D matrix-vector product: XLA:CPU runs it (and its transpose in the gradient) far faster than an
        # N-D dot
        return (phi.reshape(-1, phi.shape[-1]) @ self.weight).reshape(phi.shape[:-1])

    def l2_penalty(self) -> jax.Array:
        """``0.5 * ||w||^2`` (the dummy score is not regularised: it plays the role of a bias)."""
        return 0.5 * jnp.sum(self.weight**2)


def relu(x):
    """ReLU as a module-level function, so that a fitted MLP scorer pickles (``jax.nn.relu`` does not)."""
    return jnp.maximum(x, 0)


def identity(x):
    """Identity output activation (module-level, picklable)."""
    return x


class MLPScorer(eqx.Module):
    """One-hidden-layer (or deeper) MLP score ``s_ij = MLP(phi(i, j))`` with a learned dummy score.

    Parameters
    ----------
    n_features : int
        Width ``F`` of the pair features.
    hidden : int
        Hidden width.
    depth : int
        Number of hidden layers.
    key : jax.random key
        Initialisation key.
    """

    mlp: eqx.nn.MLP
    dummy: jax.Array

    def __init__(self, n_features: int, hidden: int = 32, depth: int = 1, *, key):
        self.mlp = eqx.nn.MLP(
            n_features, "scalar", hidden, depth, activation=relu, final_activation=identity, key=key
        )
        self.dummy = jnp.zeros((), jnp.float32)

    def __call__(self, phi: jax.Array) -> jax.Array:
        phi = jnp.asarray(phi, jnp.float32)
        flat = phi.reshape(-1, phi.shape[-1])
        return jax.vmap(self.mlp)(flat).reshape(phi.shape[:-1])

    def l2_penalty(self) -> jax.Array:
        """``0.5 * sum of squared weight matrices`` (biases and dummy score not regularised)."""
        return 0.5 * sum(jnp.sum(layer.weight**2) for layer in self.mlp.layers)


def make_scorer(kind: str, n_features: int, *, key=None, hidden: int = 32):
    """Build a scorer by name: ``"linear"`` or ``"mlp"``."""
    if kind == "linear":
        return LinearScorer(n_features)
    if kind == "mlp":
        return MLPScorer(n_features, hidden, key=jax.random.key(0) if key is None else key)

    raise InvalidInputError(f"scorer must be 'linear' or 'mlp', got {kind!r}")
