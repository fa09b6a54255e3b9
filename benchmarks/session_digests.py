"""Digests of active-learning sessions: a refactor of the session code must keep every seed's questions.

Runs 20 one-annotator sessions (every strategy, ``propagation`` classes and pairs, with and without an error
rate, a confidence stop) and one team session (two annotators, refits, an undo) on a third of iris, and writes a
digest of each: the questions asked, the final clustering, why it stopped. Run it on two checkouts and compare:

    python benchmarks/session_digests.py before.json   # on the old checkout
    python benchmarks/session_digests.py after.json    # on the new one
    diff before.json after.json
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import warnings
from pathlib import Path

from sklearn.datasets import load_iris

from jaxclust import DPMM
from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle, TeamSession


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:12]


def main(out: str) -> None:
    warnings.filterwarnings("ignore")
    X, y = load_iris(return_X_y=True)
    X, y = X[::3], y[::3]
    digests = {}
    for strategy in ("explore", "batch", "entropy", "random", "naive_batch"):
        for propagation in ("classes", "pairs"):
            for rate in (0.0, 0.1):
                learner = ActiveLearner(
                    DPMM(random_state=1, n_samples=20, n_burnin=20),
                    GoldOracle(y),
                    strategy=strategy,
                    batch_size=3,
                    progress=False,
                    propagation=propagation,
                    error_rate=rate,
                    stop_entropy=0.05,
                )
                history = learner.run(X, 9, eval_labels=y)
                digests[f"{strategy}-{propagation}-{rate}"] = _digest(
                    [
                        [r["queries"] for r in history],
                        learner.labels_.tolist(),
                        learner.stop_reason_,
                        learner.max_entropy_,
                    ]
                )
    with tempfile.TemporaryDirectory() as tmp, AnswerStore(Path(tmp) / "team.jsonl") as store:
        learner = ActiveLearner(DPMM(random_state=0, n_samples=20, n_burnin=20), None, progress=False)
        team = TeamSession(learner, X, store, random_state=3)
        asked = []
        for k in range(8):
            who = "ab"[k % 2]
            q = team.question(who)
            asked.append((q.i, q.j, q.kind))
            team.answer(who, q.i, q.j, "must" if y[q.i] == y[q.j] else "cannot")
            if k % 3 == 2:
                team.refit()
        team.undo("a")
        team.refit()
        q = team.question("a")
        asked.append((q.i, q.j, q.kind))
        digests["team"] = _digest([asked, team.labels_.tolist(), team.n_fits])
    Path(out).write_text(json.dumps(digests, indent=1) + "\n")
    print(json.dumps(digests, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "session_digests.json")
