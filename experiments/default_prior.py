"""Is there a default component prior that is right without tuning? The DPMM without answers, across prior widths.

For every set of the active suite (``active_suite.py``: standardised columns, gold labels) and the verb sets
(``active_dpmm.py``: NMF to 35 dimensions, standardised), the unsupervised DPMM of the default session (4 chains,
50 burn-in, 10 samples 3 apart, seed 0) is fitted with ``NormalGamma.from_data(X, scale=s)`` for each width
``s`` of ``--scales`` (a component's expected variance per column is ``s`` times the data's; ``DPMM()``'s
default is 0.5). Reported per set and width: the number of clusters, ARI and V-beta of ``labels_``; per set:
k-means with the true number of classes (scikit-learn, 10 restarts), the width that empirical Bayes chooses
without labels (the held-out log posterior predictive of ``active_dpmm.select_prior_scale``, 2 folds of 20 %,
over the same widths), and the width that a few answers choose: for 10, 20 and 40 random pairs answered from the
gold labels (5 draws each), the width whose samples give the answers the highest log-likelihood (the share of
samples that put a pair together, clipped to [0.02, 0.98], is the probability of "same"). Writes
``sets/<set>.json`` as each set finishes (a rerun goes on from there), then ``default_prior.json`` and
``default_prior.png`` (one panel per set: the score against the width, k-means as a line, the empirical-Bayes
choice circled).

    python experiments/default_prior.py --out experiments/results/default_prior
    python experiments/default_prior.py --sets wine general --scales 0.5 2 --out /tmp/prior
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from active_dpmm import SETS as VERB_SETS  # noqa: E402
from active_suite import DATASETS, answers_log_likelihood, best_width  # noqa: E402

SCALES = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 4.0)
VERBS = ("general", "bio-top", "bio-fine")
ANSWERS = (10, 20, 40)  # numbers of random answered pairs that choose a width
ANSWER_SEEDS = 5


def answer_pairs(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random pairs of distinct items ``(i, j)`` of ``n`` (with replacement across pairs)."""
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, n, 4 * m + 8), rng.integers(0, n, 4 * m + 8)
    keep = i != j
    return i[keep][:m], j[keep][:m]


def load(name: str):
    """Features and gold labels of a suite set or a verb set, as the two active experiments prepare them."""
    if name in VERB_SETS:
        from active_dpmm import load_set, preprocess

        X_raw, y, _ = load_set(name)
        return preprocess(X_raw, 35, 0), np.asarray(y)
    from active_suite import load as load_suite

    return load_suite(name)


def measure(name: str, scales=SCALES, seed: int = 0, echo=print) -> dict:
    from active_dpmm import select_prior_scale
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from jaxclust import DPMM
    from jaxclust.dpmm import NormalGamma
    from jaxclust.metrics.partition import v_beta

    X, y = load(name)
    k = len(np.unique(y))
    km = KMeans(k, n_init=10, random_state=seed).fit_predict(X)
    settings = dict(n_chains=4, n_burnin=50, n_samples=10, thin=3, random_state=seed)
    out = {
        "set": name,
        "n": int(len(y)),
        "d": int(X.shape[1]),
        "classes": k,
        "kmeans": {"ari": float(adjusted_rand_score(y, km)), "v_beta": float(v_beta(y, km))},
        "scales": [],
    }
    asked = {(m, r): answer_pairs(len(y), m, r) for m in ANSWERS for r in range(ANSWER_SEEDS)}
    fit_of_answers: dict = {key: {} for key in asked}
    for s in scales:
        t0 = time.perf_counter()
        fit = DPMM(prior=NormalGamma.from_data(X, scale=s), **settings).fit(X)
        row = {
            "scale": float(s),
            "clusters": int(len(np.unique(fit.labels_))),
            "ari": float(adjusted_rand_score(y, fit.labels_)),
            "v_beta": float(v_beta(y, fit.labels_)),
            "seconds": time.perf_counter() - t0,
        }
        out["scales"].append(row)
        for key, (i, j) in asked.items():
            fit_of_answers[key][float(s)] = answers_log_likelihood(fit.samples_, i, j, y[i] == y[j])
        echo(
            f"[{name}] scale {s:g}: {row['clusters']} clusters, ARI {row['ari']:.3f}, V-beta {row['v_beta']:.3f}"
        )
    best, rows = select_prior_scale(X, DPMM(**settings), grid=scales, seed=seed, echo=lambda *a: None)
    out["empirical_bayes"] = {
        "scale": best,
        "heldout_logpred": {r["scale"]: r["heldout_logpred"] for r in rows},
    }
    # the width whose samples best predict a few answered pairs (ties: the one nearest the default)
    by_scale = {row["scale"]: row for row in out["scales"]}
    out["chosen_by_answers"] = []
    for (m, r), scores in fit_of_answers.items():
        pick = best_width(scores)
        row = by_scale[pick]
        out["chosen_by_answers"].append(
            {"answers": m, "seed": r, "scale": pick, "ari": row["ari"], "v_beta": row["v_beta"]}
        )
    echo(f"[{name}] k-means (k = {k}): ARI {out['kmeans']['ari']:.3f}; empirical Bayes chooses {best:g}")
    return out


def figure(results: list[dict], path: Path) -> None:
    from matplotlib.figure import Figure

    cols = 4
    rows = -(-len(results) // cols)
    fig = Figure(figsize=(4 * cols, 2.8 * rows))
    for k, r in enumerate(results):
        ax = fig.add_subplot(rows, cols, k + 1)
        score = "v_beta" if r["set"] in VERB_SETS else "ari"
        s = [row["scale"] for row in r["scales"]]
        v = [row[score] for row in r["scales"]]
        ax.plot(s, v, "o-", color="C0", label="DPMM, no answer")
        ax.axhline(r["kmeans"][score], color="C1", ls="--", label="k-means, true k")
        eb = r["empirical_bayes"]["scale"]
        ax.plot([eb], [v[s.index(eb)]], "o", ms=12, mfc="none", color="C3", label="empirical Bayes")
        ax.axvline(0.5, color="0.7", lw=0.8)
        ax.set_xscale("log")
        ax.set_title(f"{r['set']} ({r['classes']} classes)", fontsize=9)
        ax.set_xlabel("prior scale")
        ax.set_ylabel("V-beta" if score == "v_beta" else "ARI")
    fig.axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sets", nargs="+", default=list(DATASETS) + list(VERBS), choices=list(DATASETS) + list(VERB_SETS)
    )
    ap.add_argument("--scales", nargs="+", type=float, default=list(SCALES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/default_prior")
    args = ap.parse_args(argv)
    import jax

    out = Path(args.out)
    (out / "sets").mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.sets:  # one file per set, written as it finishes: a rerun goes on where this one stopped
        path = out / "sets" / f"{name}.json"
        done = json.loads(path.read_text()) if path.is_file() else None
        if (
            done is None
            or [r["scale"] for r in done["scales"]] != [float(s) for s in args.scales]
            or "chosen_by_answers" not in done
        ):
            done = measure(name, args.scales, args.seed)
            path.write_text(json.dumps(done, indent=1))
            jax.clear_caches()  # each set compiles its own programs; a long run would otherwise keep them all
        results.append(done)
    suite = [r for r in results if r["set"] not in VERB_SETS]
    verbs = [r for r in results if r["set"] in VERB_SETS]
    at = lambda r, s, key: next(row[key] for row in r["scales"] if row["scale"] == s)  # noqa: E731
    summary = {}
    for s in [*args.scales, "empirical_bayes"]:
        pick = (lambda r: r["empirical_bayes"]["scale"]) if s == "empirical_bayes" else (lambda r, s=s: s)
        summary[str(s)] = {
            "suite_at_or_above_kmeans": sum(at(r, pick(r), "ari") >= r["kmeans"]["ari"] for r in suite),
            "suite_mean_ari": float(np.mean([at(r, pick(r), "ari") for r in suite])) if suite else None,
            "verbs_at_or_above_kmeans": sum(at(r, pick(r), "v_beta") >= r["kmeans"]["v_beta"] for r in verbs),
            "verbs_mean_v_beta": float(np.mean([at(r, pick(r), "v_beta") for r in verbs])) if verbs else None,
        }
    for m in ANSWERS:  # the widths a few answers choose: means over the answer draws

        def chosen(r, key, m=m):
            return [c[key] for c in r.get("chosen_by_answers", []) if c["answers"] == m]

        def wins(sets, key):  # sets at or above k-means, each set counting the share of its draws that are
            return float(sum(np.mean(np.array(chosen(r, key)) >= r["kmeans"][key]) for r in sets))

        summary[f"chosen_by_{m}_answers"] = {
            "suite_at_or_above_kmeans": wins(suite, "ari") if suite else None,
            "suite_mean_ari": float(np.mean([np.mean(chosen(r, "ari")) for r in suite])) if suite else None,
            "verbs_at_or_above_kmeans": wins(verbs, "v_beta") if verbs else None,
            "verbs_mean_v_beta": float(np.mean([np.mean(chosen(r, "v_beta")) for r in verbs]))
            if verbs
            else None,
        }
    (out / "default_prior.json").write_text(json.dumps({"results": results, "summary": summary}, indent=1))
    figure(results, out / "default_prior.png")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
