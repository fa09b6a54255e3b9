"""Convergence diagnostics on label-invariant traces (log joint, number of components, alpha).

Split R-hat and ESS come from ``numpyro.diagnostics`` (plain NumPy on ``(chain, draw)`` arrays), computed
on the
host after sampling. Raw labels are never diagnosed: they switch freely between samples.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

__all__ = ["chain_diagnostics"]


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
