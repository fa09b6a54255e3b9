"""Convergence diagnostics on label-invariant traces (log joint, number of components, alpha), and how often
the split-merge moves were accepted.

Split R-hat and ESS come from ``numpyro.diagnostics`` (plain NumPy on ``(chain, draw)`` arrays), computed on
the host after sampling. Raw labels are never diagnosed: they switch freely between samples.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

from jaxclust.dpmm.splitmerge import MOVES

__all__ = ["chain_diagnostics", "split_merge_summary"]


def chain_diagnostics(traces: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Split R-hat and effective sample size of each ``(n_chains, n_draws)`` trace.

    Returns ``{name: {"r_hat": float, "ess": float}}``; NaN where undefined (constant trace, fewer than 4
    draws).
    """
    out = {}
    for name, x in traces.items():
        x = np.asarray(x, dtype=np.float64)
        r_hat = ess = float("nan")
        if x.ndim == 2 and x.shape[1] >= 4 and np.ptp(x) > 0:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                r_hat = float(split_gelman_rubin(x))
                ess = float(effective_sample_size(x))
        out[name] = {"r_hat": r_hat, "ess": ess}
    return out


def split_merge_summary(moves) -> dict[str, float]:
    """Totals over chains of the split-merge counts ``moves`` (C, 4) (order of
    :data:`jaxclust.dpmm.splitmerge.MOVES`), and ``split_acceptance`` / ``merge_acceptance``: accepted over
    proposed (NaN when none was proposed). Rates near 0 over a long run mean the chains move by the local
    sweep alone; on separated data most splits are accepted early in burn-in and few afterwards."""
    total = np.asarray(moves, dtype=np.int64).reshape(-1, len(MOVES)).sum(axis=0)
    out: dict[str, float] = {name: int(v) for name, v in zip(MOVES, total, strict=True)}
    for kind in ("split", "merge"):
        proposed = out[f"proposed_{kind}s"]
        out[f"{kind}_acceptance"] = out[f"accepted_{kind}s"] / proposed if proposed else float("nan")
    return out
