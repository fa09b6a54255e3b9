"""Draw the constrained-DPMM learning curves and the k-means baselines of one verb set in one figure.

Usage::

    python experiments/plot_merged.py ACTIVE.json BASELINES.json --out merged.png [--metric v_beta]

``ACTIVE.json`` is written by ``experiments/active_dpmm.py``, ``BASELINES.json`` by
``experiments/kmeans_baselines.py``; both hold ``{"runs": [{"name", "history": [{"n_constraints", ...}]}]}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaxclust.apps.demo import plot_curves


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("active")
    ap.add_argument("baselines")
    ap.add_argument("--out", required=True)
    ap.add_argument("--metric", action="append", default=None, help="metric(s) to draw (default v_beta)")
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    runs = (
        json.loads(Path(args.active).read_text())["runs"]
        + json.loads(Path(args.baselines).read_text())["runs"]
    )
    fig = plot_curves(runs, metrics=tuple(args.metric or ["v_beta"]), title=args.title)
    fig.savefig(args.out, dpi=110)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
