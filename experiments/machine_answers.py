"""A chat model that answers first: how many human answers does it save, on the 14-set suite?

A stand-in chat server (``jaxclust.active.chat_fake.FakeChatServer``) answers "same category?" from the gold
labels, wrong about a share of the different pairs (``--false-same``) and of the same pairs
(``--false-different``), each pair's belief fixed once, and each of its ``--replies`` sampled replies flipped with
chance ``--noise`` (so that its replies split on some pairs). Three sessions per set and seed, all the default
session of ``jaxclust annotate`` (``ActiveLearner(DPMM(4 chains, 50 burn-in, 10 samples 3 apart))``, explore
questions, answers joining classes; ``--model nested``: ``NestedDPMM(random_state=seed)``, classes in the sampled
model), the person being the gold labels:

* ``human``: a person answers every question (``--human-queries`` of them).
* ``machine``: ``MachineFirst`` (the terminal's routing): the machine answers first, where its replies split by
  their majority; the person answers where they tie, where the model is sure of the opposite (95 % of its
  samples), and a share ``--check`` of the unanimous answers and ``--split-check`` of the majority ones as checks
  (one share, or one for its "same"s and one for its "different"s; by default ``MachineFirst``'s); the machine's
  answers are soft, at the error rates each kind learned from its checks and from what it said about the pairs
  nobody checked.
* ``unanimous``: the published recipe: the machine's unanimous answers are taken as right (hard constraints),
  the person answers only where its replies split.

A machine session asks ``--max-questions`` questions; the person answers at most ``--human-budget`` of them
(past it, the pairs the machine hands to people are left unanswered). Scores: ARI after each question, and
against the number of human answers given so far (the clustering just before the person's next answer, so every
machine answer before it counts; with the whole budget spent, the session's last clustering). Written: one JSON
per run (``--out``), and with ``--summarize`` a table, ``machine_answers.json`` and ``machine_answers.png``.

    python experiments/machine_answers.py --dataset wine --seed 0 --out experiments/results/machine_answers
    python experiments/machine_answers.py --summarize experiments/results/machine_answers
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
from active_suite import DATASETS, load
from sklearn.metrics import adjusted_rand_score

from jaxclust.answers import Answer

MODES = ("human", "machine", "unanimous")


class Person:
    """The gold labels as a person with a budget of ``budget`` answers; past it, "don't know" (the machine
    goes on alone, and what it handed to people stays unanswered)."""

    def __init__(self, y, budget: int):
        self.y, self.budget, self.asked = y, budget, 0

    def __call__(self, i: int, j: int) -> str:
        if self.asked >= self.budget:
            return "unknown"
        self.asked += 1
        return "must" if self.y[i] == self.y[j] else "cannot"


def _shares(given: list[float]):
    """One share for both answers, or SAME DIFFERENT, as ``MachineFirst`` takes them."""
    return given[0] if len(given) == 1 else dict(zip(("must", "cannot"), given, strict=True))


def run_one(dataset: str, mode: str, seed: int, args) -> dict:
    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner
    from jaxclust.active.chat import ChatEndpoint, ChatOracle, MachineFirst
    from jaxclust.active.chat_fake import FakeChatServer

    X, y = load(dataset)
    texts = [f"item {k}" for k in range(len(y))]
    if args.model == "nested":
        from jaxclust import NestedDPMM

        model = NestedDPMM(random_state=seed)
    else:
        model = DPMM(n_chains=4, n_burnin=50, n_samples=10, thin=3, random_state=seed)
    human = mode == "human"
    person = Person(y, args.human_queries if human else args.human_budget)
    server = FakeChatServer(
        texts,
        y,
        false_same=args.false_same,
        false_different=args.false_different,
        noise=args.noise,
        seed=seed,
    )
    t0 = time.perf_counter()
    with server:
        routed, error_rate = person, 0.0
        if not human:
            chat = ChatOracle(
                texts, ChatEndpoint(server.url, "fake", api_key_env=None), n_replies=args.replies
            )
            if mode == "machine":
                sure = None if args.sure > 1 else args.sure
                check = None if args.check is None else _shares(args.check)
                split_check = None if args.split_check is None else _shares(args.split_check)
                routed = MachineFirst(
                    chat, person, check=check, sure=sure, random_state=seed, split_check=split_check
                )
                error_rate = routed.error_rates()
            else:  # never checked, never routed for a contradiction, every split to the person: hard answers
                routed = MachineFirst(chat, person, check=0.0, sure=None, random_state=seed, split_check=1.0)
        learner = ActiveLearner(
            model, routed, strategy="explore", random_state=seed, progress=False, error_rate=error_rate
        )
        n_max = args.human_queries if human else args.max_questions
        session = learner.iter_questions(X, n_max)
        ari, humans, who = [], [], []
        try:
            pair = next(session)
            while True:
                ari.append(adjusted_rand_score(y, learner.labels_))
                humans.append(person.asked)
                before = person.asked
                if human:
                    reply = routed(*pair)
                else:
                    routed.observe(learner.samples_)  # as ActiveLearner.run does
                    reply = routed.answer(*pair)
                who.append(
                    "person" if person.asked > before else "machine" if isinstance(reply, Answer) else "none"
                )
                pair = session.send(reply)
        except StopIteration:
            pass
        finally:
            session.close()
        ari.append(adjusted_rand_score(y, learner.labels_))
        humans.append(person.asked)
    # ARI with h human answers: the clustering just before the person's (h+1)-th answer
    by_human = [ari[max(k for k in range(len(ari)) if humans[k] <= h)] for h in range(person.asked + 1)]
    routes = list(zip(getattr(routed, "routes", []), who, strict=False))  # (route, who answered) per question
    to_person = [r for r, w in routes if w == "person"]
    wrong = sum(
        1
        for r, w in routes
        if w == "machine" and r["verdict"] != ("must" if y[r["i"]] == y[r["j"]] else "cannot")
    )
    return {
        "dataset": dataset,
        "mode": mode,
        "seed": seed,
        "n": int(len(y)),
        "n_classes": int(len(np.unique(y))),
        "ari": [round(v, 5) for v in ari],
        "ari_by_human": [round(v, 5) for v in by_human],
        "n_questions": len(who),
        "n_human": person.asked,
        "n_machine": who.count("machine"),
        "n_machine_wrong": wrong,
        # why each question the person answered went to them (split replies, a check, a contradiction of the model)
        "human_why": dict(Counter(r["why"] for r in to_person)),
        # the contradictions a person answered: the machine's verdict, and whether the person agreed with it
        "contradictions": dict(
            Counter(
                f"{r['verdict']} {'right' if r.get('person') == r['verdict'] else 'wrong'}"
                for r in to_person
                if r["why"] == "contradicts"
            )
        ),
        "n_clusters_final": int(len(np.unique(learner.labels_))),
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "summarize", "dataset", "seed")},
        "seconds": time.perf_counter() - t0,
    }


def summarize(folder: Path, human_at: int = 60, machine_humans: int = 20) -> dict:
    runs = [json.loads(p.read_text()) for p in sorted(folder.glob("run_*.json"))]
    rows = []
    for ds in DATASETS:
        for seed in sorted({r["seed"] for r in runs if r["dataset"] == ds}):
            got = {r["mode"]: r for r in runs if r["dataset"] == ds and r["seed"] == seed}
            if "human" not in got:
                continue
            h = got["human"]["ari_by_human"]
            ref60, ref100 = h[min(human_at, len(h) - 1)], h[-1]
            row = {"dataset": ds, "seed": seed, "human@60": ref60, "human@100": ref100}
            for mode in ("machine", "unanimous"):
                if mode not in got:
                    continue
                m = got[mode]["ari_by_human"]
                row[f"{mode}+{machine_humans}"] = m[min(machine_humans, len(m) - 1)]
                reach = next((k for k, v in enumerate(m) if v >= 0.9 * ref100), None)
                row[f"{mode}_humans_to_0.9"] = reach
                row[f"{mode}_machine_answers"] = got[mode]["n_machine"]
                row[f"{mode}_machine_wrong"] = got[mode]["n_machine_wrong"]
            rows.append(row)
    wins = {}
    for mode in ("machine", "unanimous"):
        key = f"{mode}+{machine_humans}"
        wins[mode] = sum(1 for r in rows if key in r and r[key] >= r["human@60"] - 1e-9)
    out = {"rows": rows, "at_or_above_human_60": wins, "n_rows": len(rows)}
    (folder / "machine_answers.json").write_text(json.dumps(out, indent=1))
    _figure(rows, folder / "machine_answers.png", machine_humans)
    return out


def _figure(rows: list[dict], path: Path, machine_humans: int) -> None:
    import matplotlib.pyplot as plt

    names = [f"{r['dataset']}/{r['seed']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows)), 4))
    for k, (key, label) in enumerate(
        (
            ("human@60", "person only, 60 answers"),
            (f"machine+{machine_humans}", f"machine + {machine_humans} person answers (soft, checked)"),
            (f"unanimous+{machine_humans}", f"unanimous machine + {machine_humans} (hard)"),
        )
    ):
        ax.bar(x + (k - 1) * 0.27, [r.get(key, np.nan) for r in rows], 0.27, label=label)
    ax.set_xticks(x, names, rotation=60, ha="right")
    ax.set_ylabel("ARI")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", nargs="+", default=list(DATASETS))
    ap.add_argument("--seed", type=int, nargs="+", default=[0])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--false-same", type=float, default=0.25)
    ap.add_argument("--false-different", type=float, default=0.05)
    ap.add_argument("--noise", type=float, default=0.05)
    ap.add_argument("--replies", type=int, default=5)
    ap.add_argument(
        "--check",
        type=float,
        nargs="+",
        default=None,
        help="machine mode: the checked share of the machine's answers, one or SAME DIFFERENT (default: "
        "MachineFirst's, a fifth of its 'same's and a twentieth of its 'different's; before 2026-12-07, 0.1)",
    )
    ap.add_argument(
        "--split-check",
        type=float,
        nargs="+",
        default=None,
        help="machine mode: the checked share of the answers given by the majority of split replies, one or "
        "SAME DIFFERENT (default: MachineFirst's, --check's shares; 1: every split to the person, as before "
        "2026-12-07)",
    )
    ap.add_argument(
        "--sure", type=float, default=0.95, help="machine mode: MachineFirst's sure (above 1: never)"
    )
    ap.add_argument("--human-queries", type=int, default=100)
    ap.add_argument("--human-budget", type=int, default=40)
    ap.add_argument("--max-questions", type=int, default=150)
    ap.add_argument(
        "--model", default="dpmm", choices=("dpmm", "nested"), help="DPMM (the class layer) or NestedDPMM"
    )
    ap.add_argument("--out", default="experiments/results/machine_answers")
    ap.add_argument("--summarize", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        got = summarize(out)
        for r in got["rows"]:
            print(json.dumps(r))
        print("at or above the person-only session at 60:", got["at_or_above_human_60"], "of", got["n_rows"])
        return
    for seed in args.seed:
        for ds in args.dataset:
            for mode in args.modes:
                path = out / f"run_{ds}_{mode}_{seed}.json"
                if path.exists():
                    continue
                rec = run_one(ds, mode, seed, args)
                path.write_text(json.dumps(rec))
                print(
                    f"{ds} {mode} seed {seed}: ARI {rec['ari'][-1]:.3f} after {rec['n_questions']} questions "
                    f"({rec['n_human']} by the person, {rec['n_machine']} by the machine, "
                    f"{rec['n_machine_wrong']} of those wrong), {rec['seconds']:.0f} s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
