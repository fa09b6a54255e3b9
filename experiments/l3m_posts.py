"""L3M on streams of posts: NPS chat sessions clustered by author (true arrival order) and 20 Newsgroups
streams
clustered by topic and by author (simulated arrival order: posts of a few random groups/authors in random
order).

Systems: L3M (gamma, t tuned on dev VI), best-left-link (gamma = 0), pairwise logistic + best-left-link, all
singletons, one cluster. Score: variation of information (lower is better), mean over test streams.
Features: tf-idf cosine (vectorizer fitted on the training streams), shared rare words, position gap.

Writes ``OUT/posts.json`` and ``OUT/posts_vi.png``. Usage::

    python experiments/l3m_posts.py --out results/l3m [--quick]

Experiment grids (kind ``l3m_posts``, ``experiments/configs/l3m_posts.toml``): :func:`run_one` runs ONE task,
:func:`summarize` writes ``posts.json`` and the figure from the tasks that exist.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

sys.path.insert(0, str(Path(__file__).resolve().parent))
from l3m_coref import pairwise_baseline

from jaxclust.l3m import L3M, Document, LinearScorer
from jaxclust.l3m.features import POST_FEATURE_NAMES, post_features
from jaxclust.metrics import variation_of_information

SYSTEMS = ("l3m", "best_left_link", "pairwise", "singletons", "one_cluster")


def nps_streams(max_len):
    """NPS chat: one stream per session (true order), cut into pieces of at most max_len posts; label =
    user."""
    from jaxclust.datasets import load_nps_chat

    ds = load_nps_chat("user", exclude_system=True)
    sess = np.asarray(ds.extra["session"])
    order = np.asarray(ds.extra["post_index"])
    streams = []
    for s in sorted(set(sess.tolist())):
        idx = np.flatnonzero(sess == s)
        idx = idx[np.argsort(order[idx], kind="stable")]
        for a in range(0, len(idx), max_len):
            part = idx[a : a + max_len]
            if len(part) >= 10:
                streams.append((s, [ds.texts[k] for k in part], ds.labels["user"][part]))
    return streams


def newsgroup_streams(label, n_streams, per_stream, n_classes, seed):
    """20 Newsgroups: streams of posts from n_classes random classes, in random (simulated arrival) order."""
    from jaxclust.datasets import load_newsgroups

    ds = load_newsgroups(labels=label)
    y = ds.labels[label]
    rng = np.random.default_rng(seed)
    streams = []
    for s in range(n_streams):
        cls = rng.choice(np.unique(y), size=n_classes, replace=False)
        pool = np.flatnonzero(np.isin(y, cls))
        idx = rng.choice(pool, size=min(per_stream, len(pool)), replace=False)
        streams.append((f"{label}{s}", [ds.texts[k][:3000] for k in idx], y[idx]))
    return streams


def split_streams(streams, seed):
    """Split streams into train / dev / test (60 / 20 / 20 %) by stream (session) name."""
    names = sorted({n for n, _, _ in streams})
    rng = np.random.default_rng(seed)
    rng.shuffle(names)
    n = len(names)
    cut = {
        "train": names[: int(0.6 * n)],
        "dev": names[int(0.6 * n) : int(0.8 * n)],
        "test": names[int(0.8 * n) :],
    }
    return {k: [s for s in streams if s[0] in set(v)] for k, v in cut.items()}


def mean_vi(golds, preds):
    return float(np.mean([variation_of_information(g, p) for g, p in zip(golds, preds, strict=False)]))


def run_task(name, streams, window, epochs, thresholds, gammas, args):
    from sklearn.feature_extraction.text import TfidfVectorizer

    parts = split_streams(streams, args.seed)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2, stop_words="english")
    vec.fit([t for _, texts, _ in parts["train"] for t in texts])
    vec._n_fit = sum(len(t) for _, t, _ in parts["train"])
    docs = {
        k: [Document(post_features(t, None, window, vec), np.asarray(y), None, n) for n, t, y in v]
        for k, v in parts.items()
    }
    gold = {k: [np.asarray(y) for _, _, y in v] for k, v in parts.items()}

    def fit(g):
        return L3M(
            gamma=g,
            optimizer="adam",
            learning_rate=args.lr,
            l2=args.l2,
            n_epochs=epochs,
            batch_size=4,
            random_state=args.seed,
        ).fit(docs["train"], dev_documents=docs["dev"])

    preds = {"dev": {}, "test": {}}
    bll = fit(0.0).set_params(decoding="best_link")
    grid, best = {}, (np.inf, None, None, None)
    for g in gammas:
        est = fit(g)
        for t in thresholds:
            vi = mean_vi(gold["dev"], est.set_params(threshold=t).predict_many(docs["dev"]))
            grid[f"{g},{t}"] = vi
            if vi < best[0]:
                best = (vi, g, t, est)
    est = best[3].set_params(threshold=best[2])
    clf = pairwise_baseline(docs["train"], 400_000, args.seed)
    pw = L3M(decoding="best_link")
    pw_best = (np.inf, None)
    nf = len(POST_FEATURE_NAMES)
    for t in thresholds:
        pw._set_fitted(LinearScorer(nf, clf.coef_[0], np.log(t / (1 - t)) - clf.intercept_[0]), nf, {})
        vi = mean_vi(gold["dev"], pw.predict_many(docs["dev"]))
        if vi < pw_best[0]:
            pw_best = (vi, t)
    t = pw_best[1]
    pw._set_fitted(LinearScorer(nf, clf.coef_[0], np.log(t / (1 - t)) - clf.intercept_[0]), nf, {})
    scores = {}
    for s in preds:
        p = {
            "l3m": est.predict_many(docs[s]),
            "best_left_link": bll.predict_many(docs[s]),
            "pairwise": pw.predict_many(docs[s]),
            "singletons": [np.arange(len(y)) for y in gold[s]],
            "one_cluster": [np.zeros(len(y), int) for y in gold[s]],
        }
        scores[s] = {k: round(mean_vi(gold[s], v), 4) for k, v in p.items()}
    return {
        "n_streams": {k: len(v) for k, v in parts.items()},
        "window": window,
        "tuning": {
            "l3m": {"gamma": best[1], "threshold": best[2], "dev_vi_grid": grid},
            "pairwise": {"threshold": pw_best[1]},
        },
        "vi": scores,
    }


TASKS = ("nps_chat_author", "newsgroups_topic", "newsgroups_author")
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def task_streams(task, quick, seed):
    """The streams of one task (the quick subset: shorter/fewer streams, every 6th NPS piece)."""
    if task == "nps_chat_author":
        streams = nps_streams(64 if quick else 200)
        return streams[::6] if quick else streams
    label = {"newsgroups_topic": "topic", "newsgroups_author": "author"}[task]
    return newsgroup_streams(label, 10 if quick else 40, 50 if quick else 100, 5, seed)


def run_one(
    task: str,
    quick: bool = False,
    epochs: int | None = None,
    window: int | None = None,
    gammas: list | None = None,
    thresholds: list = THRESHOLDS,
    lr: float = 0.05,
    l2: float = 1e-5,
    seed: int = 0,
) -> dict:
    """ONE task (the grid kind ``l3m_posts``): its streams, L3M (gamma, t tuned on dev VI) and the baselines.

    ``task``: one of ``TASKS``; ``quick``: the script's quick streams and, unless given, its epochs (4), window
    (32) and gammas (0.5, 1); otherwise 20, 64 and (0.1, 0.25, 0.5, 1).
    """
    from jaxclust.errors import InvalidInputError

    if task not in TASKS:
        raise InvalidInputError(f"task: expected one of {', '.join(TASKS)}, got {task!r}")
    epochs = epochs or (4 if quick else 20)
    window = window or (32 if quick else 64)
    gammas = [float(g) for g in (gammas or ([0.5, 1.0] if quick else [0.1, 0.25, 0.5, 1.0]))]
    args = argparse.Namespace(lr=lr, l2=l2, seed=seed)
    t = time.time()
    res = run_task(task, task_streams(task, quick, seed), window, epochs, list(thresholds), gammas, args)
    return {**res, "epochs": epochs, "seconds": round(time.time() - t, 1)}


def plot(result, path):
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    names = list(result["tasks"])
    for k, sysname in enumerate(SYSTEMS):
        ax.bar(
            np.arange(len(names)) + 0.16 * k,
            [result["tasks"][n]["vi"]["test"][sysname] for n in names],
            0.16,
            label=sysname,
        )
    ax.set_xticks(np.arange(len(names)) + 0.32, names, fontsize=8)
    ax.set_ylabel("test VI (lower is better)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def summarize(records, out_dir) -> dict:
    """The grid's summary (kind ``l3m_posts``): ``posts.json`` (the script's layout) and ``posts_vi.png`` from the
    tasks that exist (one file pair per setting; a second setting gets a hash suffix)."""
    import hashlib

    out_dir = Path(out_dir)
    groups: dict[str, list] = {}
    for rec in records:
        key = json.dumps({k: v for k, v in rec["params"].items() if k != "task"}, sort_keys=True)
        groups.setdefault(key, []).append(rec)
    files = []
    for n, (key, recs) in enumerate(groups.items()):
        suffix = "" if n == 0 else "_" + hashlib.sha256(key.encode()).hexdigest()[:6]
        setting = json.loads(key)
        recs = sorted(recs, key=lambda r: TASKS.index(r["params"]["task"]))
        result = {
            "quick": setting.get("quick", False),
            "epochs": recs[0]["result"]["epochs"],
            "lr": setting.get("lr", 0.05),
            "l2": setting.get("l2", 1e-5),
            "tasks": {
                r["params"]["task"]: {k: v for k, v in r["result"].items() if k != "epochs"} for r in recs
            },
            "made_by": "jaxclust experiment (kind l3m_posts)",
            "run_ids": [r["id"] for r in recs],
        }
        (out_dir / f"posts{suffix}.json").write_text(json.dumps(result, indent=1))
        plot(result, out_dir / f"posts_vi{suffix}.png")
        files += [f"posts{suffix}.json", f"posts_vi{suffix}.png"]
    return {"files": files}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/l3m")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    q = args.quick
    epochs, window = (4, 32) if q else (20, 64)
    gammas = [0.5, 1.0] if q else [0.1, 0.25, 0.5, 1.0]
    thresholds = list(THRESHOLDS)
    t0 = time.time()
    tasks = {name: task_streams(name, q, args.seed) for name in TASKS}
    result = {"quick": q, "epochs": epochs, "lr": args.lr, "l2": args.l2, "tasks": {}}
    for name, streams in tasks.items():
        t = time.time()
        result["tasks"][name] = run_task(name, streams, window, epochs, thresholds, gammas, args)
        print(name, result["tasks"][name]["vi"]["test"], f"{time.time() - t:.0f}s", flush=True)
    result["seconds"] = round(time.time() - t0, 1)
    with open(out / "posts.json", "w") as fh:
        json.dump(result, fh, indent=1)
    plot(result, out / "posts_vi.png")
    return result


if __name__ == "__main__":
    os.environ.setdefault("JAXCLUST_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    main()
