"""A cheap, NumPy-only stand-in for the DPMM, for session tests that start many processes.

Its "posterior samples" come from a noisy nearest-centre sampler whose draws depend on ``random_state``, on
``init_labels`` (warm starts) and on the must-link groups, exactly like the DPMM's: a resumed session that did
not restore the seed or the warm start of the interrupted one would ask other questions, so tests built on it
catch that. No JAX, no compilation: a fit takes about a millisecond.
"""

from __future__ import annotations

import numpy as np


class StandInSampler:
    """Duck-types :class:`jaxclust.DPMM` for :class:`jaxclust.active.ActiveLearner`."""

    def __init__(self, n_chains=2, n_burnin=4, n_samples=6, k=3, temperature=1.5, random_state=0):
        self.n_chains = n_chains
        self.n_burnin = n_burnin
        self.n_samples = n_samples
        self.k = k
        self.temperature = temperature
        self.random_state = random_state

    def get_params(self, deep=True):
        return {
            "n_chains": self.n_chains,
            "n_burnin": self.n_burnin,
            "n_samples": self.n_samples,
            "k": self.k,
            "temperature": self.temperature,
            "random_state": self.random_state,
        }

    def set_params(self, **params):
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
        X = np.asarray(X, dtype=np.float64)
        n = len(X)
        rng = np.random.default_rng(self.random_state)
        group = (
            np.arange(n) if constraints is None or len(constraints) == 0 else np.asarray(constraints.group_of)
        )
        if init_labels is None:
            z = rng.integers(0, self.k, size=(self.n_chains, n))
        else:
            z = np.array(init_labels, dtype=np.int64) % self.k
        burn = self.n_burnin if n_burnin is None else int(n_burnin)
        samples = []
        for sweep in range(burn + self.n_samples):
            for c in range(self.n_chains):
                centres = np.array(
                    [
                        X[z[c] == m].mean(axis=0) if np.any(z[c] == m) else X[rng.integers(n)]
                        for m in range(self.k)
                    ]
                )
                d = ((X[:, None, :] - centres[None]) ** 2).sum(-1)
                score = -d / self.temperature + rng.gumbel(size=d.shape)
                # must-linked items move together: each group takes the choice of its summed scores
                g_score = np.zeros((group.max() + 1, self.k))
                np.add.at(g_score, group, score)
                z[c] = np.argmax(g_score, axis=1)[group]
            if sweep >= burn:
                samples.append(z.copy())
        self.samples_ = np.concatenate(np.array(samples).transpose(1, 0, 2), axis=0)  # chain-major (C*S, n)
        self.final_labels_ = z.copy()
        self.labels_ = self.samples_[-1].copy()
        return self


def blobs(n_per=8, spread=1.6, seed=0):
    """Three overlapping 2-D blobs: ``(X, y)`` with ``3 * n_per`` items."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    y = np.repeat(np.arange(3), n_per)
    return centres[y] + spread * rng.normal(size=(len(y), 2)), y


def write_items_csv(path, X, y) -> None:
    """``word,f1,f2`` rows; the name is the class letter and the index (``a0``, ``b9``) so a scripted person
    can answer from the names alone.
    """
    lines = ["word,f1,f2"] + [
        f"{'abc'[c]}{k},{a:.5f},{b:.5f}" for k, ((a, b), c) in enumerate(zip(X, y, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
