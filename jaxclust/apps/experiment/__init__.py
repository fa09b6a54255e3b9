"""Experiment grids: a TOML config -> runs (data set x strategy x seed x ...), run locally or on Ray, resumable.

An application, not part of the library: no library module imports it; the command line drives it
(``jaxclust experiment run CONFIG --out DIR``, ``jaxclust experiment summarize DIR``,
``jaxclust experiment list CONFIG``).

* :mod:`jaxclust.apps.experiment.config` -- the config format, grid expansion and run ids;
* :mod:`jaxclust.apps.experiment.registry` -- experiment kinds (the scripts in ``experiments/``), loaded lazily;
* :mod:`jaxclust.apps.experiment.runner` -- local and Ray execution, one atomic JSON per run, resume;
* :mod:`jaxclust.apps.experiment.records` -- the run records: atomic writes, checked reads;
* :mod:`jaxclust.apps.experiment.summary` -- the summary and figures from whatever runs exist.

From Python::

    from jaxclust.apps.experiment import load_config, run_grid
    report = run_grid("experiments/configs/verbs_general_eb.toml", "results/grid", quick=True)
"""

from __future__ import annotations

from jaxclust.apps.experiment.config import ExperimentConfig, Run, load_config, parse_config, run_id
from jaxclust.apps.experiment.registry import KINDS, register_kind, resolve_kind
from jaxclust.apps.experiment.runner import GridReport, plan, run_grid
from jaxclust.apps.experiment.summary import load_records, summarize

__all__ = [
    "ExperimentConfig",
    "GridReport",
    "KINDS",
    "Run",
    "load_config",
    "load_records",
    "parse_config",
    "plan",
    "register_kind",
    "resolve_kind",
    "run_grid",
    "run_id",
    "summarize",
]
