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
    splits = {s: load(args.dataset, s) for s in ("train", "dev", "test")}
    if args.quick:
        splits = {"train": splits["train"][:12], "dev": splits["dev"][:4], "test": splits["test"][:4]}
    docs = {s: to_documents(v, window, args.cache) for s, v in splits.items()}
    gold = {s: [d.entities for d in v] for s, v in splits.items()}
    print(f"features: {len(COREF_FEATURE_NAMES)} x window {window}, {time.time() - t0:.1f}s", flush=True)
    result = {
        "dataset": args.dataset,
        "quick": args.quick,
        "window": window,
        "epochs": epochs,
        "optimizer": args.optimizer,
        "lr": args.lr,
        "l2": args.l2,
        "scorer": args.scorer,
        "n_docs": {s: len(v) for s, v in splits.items()},
        "tuning": {},
        "scores": {},
    }
    preds = {s: {} for s in ("dev", "test")}

    def fit(gamma):
        est = L3M(
            gamma=gamma,
            l2=args.l2,
            optimizer=args.optimizer,
            learning_rate=args.lr,
            n_epochs=epochs,
            batch_size=8,
            scorer=args.scorer,
            patience=3,
            random_state=args.seed,
            verbose=False,
        )
        t = time.time()
        est.fit(docs["train"], dev_documents=docs["dev"])
        print(
            f"  gamma={gamma}: {len(est.history_['train_loss'])} epochs, best {est.history_['best_epoch']}, "
            f"{time.time() - t:.1f}s",
            flush=True,
        )
        return est

    # best-left-link: gamma = 0 training, arg-max decoding (the learned dummy score is the threshold)
    bll = fit(0.0).set_params(decoding="best_link")
    for s in preds:
        preds[s]["best_left_link"] = bll.predict_many(docs[s])
    # L3M: gamma and t chosen on dev CoNLL F1
    grid = {}
    best = (-1.0, None, None, None)
    for g in gammas:
        est = fit(g)
        for t in thresholds:
            f1 = score(gold["dev"], est.set_params(threshold=t).predict_many(docs["dev"]))["conll_f1"]
            grid[f"{g},{t}"] = f1
            if f1 > best[0]:
                best = (f1, g, t, est)
        print(f"  gamma={g}: dev CoNLL by t {[grid[f'{g},{t}'] for t in thresholds]}", flush=True)
    _, g_best, t_best, est_best = best
    est_best.set_params(threshold=t_best)
    result["tuning"]["l3m"] = {"gamma": g_best, "threshold": t_best, "dev_conll_grid": grid}
    for s in preds:
        preds[s]["l3m"] = est_best.predict_many(docs[s])
    # decoupled pairwise classifier + best-left-link (threshold tuned on dev too)
    t = time.time()
    clf = pairwise_baseline(docs["train"], 300_000 if args.quick else 1_500_000, args.seed)
    pw = L3M(decoding="best_link")
    pw_best = (-1.0, None)
    for thr in thresholds:
        from jaxclust.l3m import LinearScorer

        # link to the best candidate iff sigmoid(w.phi + b) > thr  <=>  w.phi > logit(thr) - b
        pw._set_fitted(
            LinearScorer(len(COREF_FEATURE_NAMES), clf.coef_[0], np.log(thr / (1 - thr)) - clf.intercept_[0]),
            len(COREF_FEATURE_NAMES),
            {},
        )
        f1 = score(gold["dev"], pw.predict_many(docs["dev"]))["conll_f1"]
        if f1 > pw_best[0]:
            pw_best = (f1, thr)
    thr = pw_best[1]
    pw._set_fitted(
        LinearScorer(len(COREF_FEATURE_NAMES), clf.coef_[0], np.log(thr / (1 - thr)) - clf.intercept_[0]),
        len(COREF_FEATURE_NAMES),
        {},
    )
    result["tuning"]["pairwise"] = {"threshold": thr}
    print(f"  pairwise: {time.time() - t:.1f}s, t={thr}", flush=True)
    for s in preds:
        preds[s]["pairwise"] = pw.predict_many(docs[s])
        preds[s]["exact_match"] = [exact_match(d) for d in splits[s]]
        preds[s]["singletons"] = [np.arange(d.n_mentions) for d in splits[s]]
        result["scores"][s] = {name: score(gold[s], preds[s][name]) for name in SYSTEMS}
    # gamma / t figure on dev
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    for g in gammas:
        ax.plot(thresholds, [grid[f"{g},{t}"] for t in thresholds], marker="o", label=f"L3M gamma={g}")
    ax.axhline(
        result["scores"]["dev"]["best_left_link"]["conll_f1"], color="k", ls="--", label="best-left-link"
    )
    ax.axhline(result["scores"]["dev"]["pairwise"]["conll_f1"], color="gray", ls=":", label="pairwise")
    ax.set_xlabel("threshold t")
    ax.set_ylabel("dev CoNLL F1 (singletons kept)")
    ax.set_title(f"{args.dataset}{' (quick)' if args.quick else ''}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"{args.dataset}_gamma_t.png", dpi=120)
    result["seconds"] = round(time.time() - t0, 1)
    with open(out / f"{args.dataset}.json", "w") as fh:
        json.dump(result, fh, indent=1)
    for s in ("dev", "test"):
        print(s, {k: (v["conll_f1"], v["conll_f1_no_singletons"]) for k, v in result["scores"][s].items()})
    return result


if __name__ == "__main__":
    os.environ.setdefault("JAXCLUST_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    main()
