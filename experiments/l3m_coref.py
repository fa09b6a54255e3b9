"""L3M coreference with gold mentions on LitBank / GUM: L3M (gamma, t tuned on dev) vs best-left-link (gamma
= 0),
a decoupled pairwise logistic baseline, exact string match and all-singletons.

Writes ``OUT/<dataset>.json`` (for each split and system: MUC, B3, CEAFe (R, P, F1) and ``conll_f1``,
singletons kept
and removed, micro-averaged over documents) and ``OUT/<dataset>_gamma_t.png`` (dev CoNLL F1 against gamma and
t).

Usage::

    python experiments/l3m_coref.py --dataset litbank --out results/l3m        # full run
    python experiments/l3m_coref.py --dataset litbank --out /tmp/l3m --quick   # small end-to-end check

Experiment grids (kind ``l3m_coref``, ``experiments/configs/l3m_*.toml``): :func:`run_one` trains and scores
ONE system (L3M at one gamma, best-left-link, pairwise, or the untrained baselines); :func:`summarize` chooses
gamma and t on dev among the L3M runs that exist and writes the script's ``<dataset>.json`` and figure.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from jaxclust.l3m import L3M, Document
from jaxclust.l3m.features import COREF_FEATURE_NAMES, coref_features
from jaxclust.metrics.coref import clusters_from_labels, corpus_scores

SYSTEMS = ("l3m", "best_left_link", "pairwise", "exact_match", "singletons")


def load(dataset, split):
    from jaxclust import datasets

    return (datasets.load_litbank if dataset == "litbank" else datasets.load_gum)(split)


def to_documents(cdocs, window, cache_dir):
    return [Document(coref_features(d, window, cache_dir), d.entities, None, d.doc_id) for d in cdocs]


def score(golds, preds):
    """Corpus MUC / B3 / CEAFe / CoNLL, singletons kept and removed (from key and response)."""
    keys = [clusters_from_labels(g) for g in golds]
    resps = [clusters_from_labels(p) for p in preds]
    out = {}
    for tag, filt in (("", lambda c: c), ("_no_singletons", lambda c: [e for e in c if len(e) > 1])):
        s = corpus_scores([filt(k) for k in keys], [filt(r) for r in resps])
        for m in ("muc", "b_cubed", "ceaf_e"):
            out[m + tag] = [round(100 * v, 2) for v in s[m]]
        out["conll_f1" + tag] = round(100 * s["conll_f1"], 2)
    return out


def exact_match(cdoc):
    """Link each non-pronoun mention to the closest earlier one with the same lower-cased text; pronouns
    alone."""
    last, labels, k = {}, [], 0
    for m in cdoc.mentions:
        text = m.text.lower()
        pron = (m.mention_type == "PRON") or (m.upos == "PRON")
        if not pron and text in last:
            labels.append(labels[last[text]])
        else:
            labels.append(k)
            k += 1
        if not pron:
            last[text] = len(labels) - 1
    return np.array(labels)


def pairwise_baseline(train, max_pairs, seed):
    """Logistic regression on (mention, candidate) pairs of the window: same entity or not."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for d in train:
        gold, _ = d.gold_links()
        valid = np.arange(d.n_antecedents)[None, :] < np.arange(d.n_items)[:, None]
        xs.append(d.features[valid])
        ys.append(gold[valid])
    x, y = np.concatenate(xs), np.concatenate(ys)
    neg = np.flatnonzero(~y)
    keep_rate = min(1.0, max(max_pairs - y.sum(), 1) / max(len(neg), 1))
    take = np.concatenate([np.flatnonzero(y), neg[rng.random(len(neg)) < keep_rate]])
    weight = np.where(y[take], 1.0, 1.0 / keep_rate)  # undo negative subsampling
    clf = LogisticRegression(C=1.0, max_iter=500)
    clf.fit(x[take].astype(np.float32), y[take], sample_weight=weight)
    return clf


THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def prepare(dataset, window, quick, cache):
    """Splits (the quick subset: 12 / 4 / 4 documents), their L3M documents and gold entities."""
    splits = {s: load(dataset, s) for s in ("train", "dev", "test")}
    if quick:
        splits = {"train": splits["train"][:12], "dev": splits["dev"][:4], "test": splits["test"][:4]}
    docs = {s: to_documents(v, window, cache) for s, v in splits.items()}
    gold = {s: [d.entities for d in v] for s, v in splits.items()}
    return splits, docs, gold


def fit_l3m(docs, gamma, epochs, optimizer, lr, l2, scorer, seed, echo=print):
    est = L3M(
        gamma=gamma,
        l2=l2,
        optimizer=optimizer,
        learning_rate=lr,
        n_epochs=epochs,
        batch_size=8,
        scorer=scorer,
        patience=3,
        random_state=seed,
        verbose=False,
    )
    t = time.time()
    est.fit(docs["train"], dev_documents=docs["dev"])
    echo(
        f"  gamma={gamma}: {len(est.history_['train_loss'])} epochs, best {est.history_['best_epoch']}, "
        f"{time.time() - t:.1f}s"
    )
    return est


def pairwise_scorer(clf, thr):
    from jaxclust.l3m import LinearScorer

    # link to the best candidate iff sigmoid(w.phi + b) > thr  <=>  w.phi > logit(thr) - b
    return LinearScorer(len(COREF_FEATURE_NAMES), clf.coef_[0], np.log(thr / (1 - thr)) - clf.intercept_[0])


def system_result(
    system,
    splits,
    docs,
    gold,
    *,
    gamma,
    thresholds,
    epochs,
    optimizer,
    lr,
    l2,
    scorer,
    seed,
    max_pairs,
    echo=print,
):
    """The scores of one system on dev and test (see :func:`run_one`)."""
    if system == "l3m":  # trained at gamma; every threshold scored (the choice of t is made on dev later)
        est = fit_l3m(docs, gamma, epochs, optimizer, lr, l2, scorer, seed, echo)
        by_t = {s: {} for s in ("dev", "test")}
        for t in thresholds:
            est.set_params(threshold=t)
            for s in by_t:
                by_t[s][str(float(t))] = score(gold[s], est.predict_many(docs[s]))
        echo(f"  gamma={gamma}: dev CoNLL by t {[v['conll_f1'] for v in by_t['dev'].values()]}")
        return {"gamma": float(gamma), "scores_by_threshold": by_t}
    if (
        system == "best_left_link"
    ):  # gamma = 0 training, arg-max decoding (the learned dummy score is the threshold)
        bll = fit_l3m(docs, 0.0, epochs, optimizer, lr, l2, scorer, seed, echo).set_params(
            decoding="best_link"
        )
        return {"scores": {s: score(gold[s], bll.predict_many(docs[s])) for s in ("dev", "test")}}
    if system == "pairwise":  # decoupled pairwise classifier + best-left-link (threshold tuned on dev too)
        t = time.time()
        clf = pairwise_baseline(docs["train"], max_pairs, seed)
        pw = L3M(decoding="best_link")
        best = (-1.0, None)
        for thr in thresholds:
            pw._set_fitted(pairwise_scorer(clf, thr), len(COREF_FEATURE_NAMES), {})
            f1 = score(gold["dev"], pw.predict_many(docs["dev"]))["conll_f1"]
            if f1 > best[0]:
                best = (f1, thr)
        thr = best[1]
        pw._set_fitted(pairwise_scorer(clf, thr), len(COREF_FEATURE_NAMES), {})
        echo(f"  pairwise: {time.time() - t:.1f}s, t={thr}")
        return {
            "threshold": thr,
            "scores": {s: score(gold[s], pw.predict_many(docs[s])) for s in ("dev", "test")},
        }
    if system == "baselines":  # exact string match and all singletons: no training
        return {
            "scores": {
                "exact_match": {
                    s: score(gold[s], [exact_match(d) for d in splits[s]]) for s in ("dev", "test")
                },
                "singletons": {
                    s: score(gold[s], [np.arange(d.n_mentions) for d in splits[s]]) for s in ("dev", "test")
                },
            }
        }
    raise ValueError(f"system: expected l3m, best_left_link, pairwise or baselines, got {system!r}")


def run_one(
    dataset: str = "litbank",
    system: str = "l3m",
    gamma: float | None = None,
    window: int = 128,
    epochs: int = 25,
    thresholds: list = THRESHOLDS,
    optimizer: str = "adam",
    lr: float = 0.05,
    l2: float = 1e-5,
    scorer: str = "linear",
    seed: int = 0,
    quick: bool = False,
    cache: str | None = None,
) -> dict:
    """ONE system on one corpus (the grid kind ``l3m_coref``), dev and test scores.

    ``system``: ``l3m`` (trained at ``gamma``; dev and test scored at every threshold, so the grid's summary
    chooses gamma and t on dev), ``best_left_link`` (gamma = 0, arg-max decoding), ``pairwise`` (logistic
    regression, its threshold chosen on dev) or ``baselines`` (exact match and all singletons). ``quick``: the
    script's document subset (12 / 4 / 4) and 300,000 pairwise training pairs; other parameters as the script's
    options (``window`` and ``epochs`` are not changed by ``quick`` here: give them).
    """
    from jaxclust.errors import InvalidInputError

    if system == "l3m" and (gamma is None or not gamma > 0):
        raise InvalidInputError(f"gamma: system 'l3m' needs gamma > 0, got {gamma!r}")
    t0 = time.time()
    splits, docs, gold = prepare(dataset, window, quick, cache)
    out = system_result(
        system,
        splits,
        docs,
        gold,
        gamma=gamma,
        thresholds=thresholds,
        epochs=epochs,
        optimizer=optimizer,
        lr=lr,
        l2=l2,
        scorer=scorer,
        seed=seed,
        max_pairs=300_000 if quick else 1_500_000,
        echo=lambda s: None,
    )
    return {"n_docs": {s: len(v) for s, v in splits.items()}, "seconds": round(time.time() - t0, 1), **out}


def assemble(dataset, parts, thresholds, meta):
    """The script's result layout from the systems' results (any subset of them): L3M's gamma and t chosen by dev
    CoNLL F1 (first best in gamma, then t order), the chosen model's scores, the other systems' scores."""
    result = {"dataset": dataset, **meta, "tuning": {}, "scores": {"dev": {}, "test": {}}}
    grid, best = {}, (-1.0, None, None)
    for part in sorted(parts.get("l3m", []), key=lambda r: r["gamma"]):
        for t in thresholds:
            f1 = part["scores_by_threshold"]["dev"][str(float(t))]["conll_f1"]
            grid[f"{part['gamma']},{float(t)}"] = f1
            if f1 > best[0]:
                best = (f1, part, float(t))
    if best[1] is not None:
        result["tuning"]["l3m"] = {"gamma": best[1]["gamma"], "threshold": best[2], "dev_conll_grid": grid}
    if "pairwise" in parts:
        result["tuning"]["pairwise"] = {"threshold": parts["pairwise"]["threshold"]}
    for s in ("dev", "test"):
        if best[1] is not None:
            result["scores"][s]["l3m"] = best[1]["scores_by_threshold"][s][str(best[2])]
        for name in ("best_left_link", "pairwise"):
            if name in parts:
                result["scores"][s][name] = parts[name]["scores"][s]
        if "baselines" in parts:
            for name in ("exact_match", "singletons"):
                result["scores"][s][name] = parts["baselines"]["scores"][name][s]
        result["scores"][s] = {k: result["scores"][s][k] for k in SYSTEMS if k in result["scores"][s]}
    return result


def plot_gamma_t(result, thresholds, title, path):
    """Dev CoNLL F1 against t, one line per gamma, with the baselines that exist."""
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    grid = result["tuning"].get("l3m", {}).get("dev_conll_grid", {})
    for g in dict.fromkeys(k.split(",")[0] for k in grid):
        ax.plot(thresholds, [grid[f"{g},{float(t)}"] for t in thresholds], marker="o", label=f"L3M gamma={g}")
    dev = result["scores"]["dev"]
    if "best_left_link" in dev:
        ax.axhline(dev["best_left_link"]["conll_f1"], color="k", ls="--", label="best-left-link")
    if "pairwise" in dev:
        ax.axhline(dev["pairwise"]["conll_f1"], color="gray", ls=":", label="pairwise")
    ax.set_xlabel("threshold t")
    ax.set_ylabel("dev CoNLL F1 (singletons kept)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def summarize(records, out_dir) -> dict:
    """The grid's summary (kind ``l3m_coref``): per corpus (and setting), ``<dataset>.json`` in the script's layout
    (gamma and t chosen on dev among the L3M runs that exist) and ``<dataset>_gamma_t.png``."""
    import hashlib

    out_dir = Path(out_dir)
    groups: dict[str, list] = {}
    for rec in records:
        key = json.dumps(
            {k: v for k, v in rec["params"].items() if k not in ("system", "gamma")}, sort_keys=True
        )
        groups.setdefault(key, []).append(rec)
    bases = {key: recs[0]["params"].get("dataset", "litbank") for key, recs in groups.items()}
    files = []
    for key, recs in groups.items():
        base = bases[key]
        if list(bases.values()).count(base) > 1:
            base += "_" + hashlib.sha256(key.encode()).hexdigest()[:6]
        setting = json.loads(key)
        thresholds = [float(t) for t in setting.get("thresholds", THRESHOLDS)]
        parts: dict = {}
        for r in recs:
            system = r["params"].get("system", "l3m")
            if system == "l3m":
                parts.setdefault("l3m", []).append(r["result"])
            else:
                parts[system] = r["result"]
        meta = {
            **{k: setting.get(k, d) for k, d in (("quick", False), ("window", 128), ("epochs", 25))},
            **{k: setting.get(k, d) for k, d in (("optimizer", "adam"), ("lr", 0.05), ("l2", 1e-5))},
            "scorer": setting.get("scorer", "linear"),
            "n_docs": recs[0]["result"]["n_docs"],
            "made_by": "jaxclust experiment (kind l3m_coref)",
            "run_ids": [r["id"] for r in recs],
        }
        result = assemble(bases[key], parts, thresholds, meta)
        (out_dir / f"{base}.json").write_text(json.dumps(result, indent=1))
        quick = " (quick)" if setting.get("quick") else ""
        plot_gamma_t(result, thresholds, f"{bases[key]}{quick}", out_dir / f"{base}_gamma_t.png")
        files += [f"{base}.json", f"{base}_gamma_t.png"]
    return {"files": files}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", choices=("litbank", "gum"), default="litbank")
    ap.add_argument("--out", default="results/l3m")
    ap.add_argument("--quick", action="store_true", help="small subset, few epochs (end-to-end check)")
    ap.add_argument(
        "--window", type=int, default=None, help="candidate antecedents per mention (default 128)"
    )
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--gammas", default=None, help="comma-separated gamma grid (>0) for L3M")
    ap.add_argument("--thresholds", default="0.2,0.3,0.4,0.5,0.6,0.7,0.8")
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=1e-5)
    ap.add_argument("--scorer", default="linear", choices=("linear", "mlp"))
    ap.add_argument("--cache", default=None, help="feature cache folder")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    window = args.window or (48 if args.quick else 128)
    epochs = args.epochs or (4 if args.quick else 25)
    gammas = [float(g) for g in (args.gammas or ("0.5,1.0" if args.quick else "0.1,0.25,0.5,1.0")).split(",")]
    thresholds = [float(t) for t in args.thresholds.split(",")]
    t0 = time.time()
    splits, docs, gold = prepare(args.dataset, window, args.quick, args.cache)
    print(f"features: {len(COREF_FEATURE_NAMES)} x window {window}, {time.time() - t0:.1f}s", flush=True)
    common = dict(
        thresholds=thresholds,
        epochs=epochs,
        optimizer=args.optimizer,
        lr=args.lr,
        l2=args.l2,
        scorer=args.scorer,
        seed=args.seed,
        max_pairs=300_000 if args.quick else 1_500_000,
        echo=lambda s: print(s, flush=True),
    )
    parts = {"best_left_link": system_result("best_left_link", splits, docs, gold, gamma=None, **common)}
    parts["l3m"] = [system_result("l3m", splits, docs, gold, gamma=g, **common) for g in gammas]
    parts["pairwise"] = system_result("pairwise", splits, docs, gold, gamma=None, **common)
    parts["baselines"] = system_result("baselines", splits, docs, gold, gamma=None, **common)
    meta = {
        "quick": args.quick,
        "window": window,
        "epochs": epochs,
        "optimizer": args.optimizer,
        "lr": args.lr,
        "l2": args.l2,
        "scorer": args.scorer,
        "n_docs": {s: len(v) for s, v in splits.items()},
    }
    result = assemble(args.dataset, parts, thresholds, meta)
    plot_gamma_t(
        result,
        thresholds,
        f"{args.dataset}{' (quick)' if args.quick else ''}",
        out / f"{args.dataset}_gamma_t.png",
    )
    result["seconds"] = round(time.time() - t0, 1)
    with open(out / f"{args.dataset}.json", "w") as fh:
        json.dump(result, fh, indent=1)
    for s in ("dev", "test"):
        print(s, {k: (v["conll_f1"], v["conll_f1_no_singletons"]) for k, v in result["scores"][s].items()})
    return result


if __name__ == "__main__":
    os.environ.setdefault("JAXCLUST_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    main()
