"""Shared synthetic documents for the L3M tests (not a test module)."""

from __future__ import annotations

import itertools

import numpy as np

from jaxclust.l3m import Document


def random_document(m, n_feat=3, seed=0, n_clusters=2, n_ante=None):
    rng = np.random.default_rng(seed)
    full = rng.normal(size=(m, m, n_feat)).astype(np.float32)
    clusters = rng.integers(0, n_clusters, size=m)
    return full, clusters, Document.from_pairwise(full, clusters, max_antecedents=n_ante)


def separable_document(m, seed=0, n_clusters=4, noise=0.1):
    """Pair features that reveal co-membership up to noise: [same-cluster indicator (noisy), random,
    distance]."""
    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, n_clusters, size=m)
    same = (clusters[:, None] == clusters[None, :]).astype(np.float32)
    flip = rng.random((m, m)) < noise
    noisy = np.where(flip, 1 - same, same)
    dist = np.abs(np.arange(m)[:, None] - np.arange(m)[None, :]) / m
    full = np.stack([noisy, rng.normal(size=(m, m)), dist], -1).astype(np.float32)
    return full, clusters


def canonical(labels):
    """Relabel 0, 1, ... by first occurrence."""
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    mapping = {labels[first[o]]: r for r, o in enumerate(order)}
    return np.array([mapping[v] for v in labels])


def all_forests(m):
    """Every left-linking forest of m items: parent[i] in {-1 (dummy), 0..i-1}."""
    return itertools.product(*[range(-1, i) for i in range(m)])


def forest_clusters(parent):
    z = []
    k = 0
    for p in parent:
        if p < 0:
            z.append(k)
            k += 1
        else:
            z.append(z[p])
    return tuple(z)
