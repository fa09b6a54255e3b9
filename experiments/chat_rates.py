"""How fast are a chat model's two error rates learned from the pairs people check?

A stand-in chat server (``jaxclust.active.chat_fake.FakeChatServer``) answers "same category?" from gold labels,
wrong on a share of the same pairs (``--false-different``) and of the different pairs (``--false-same``), each
pair's verdict fixed once (a model wrong about a pair is wrong every time). ``MachineFirst(check=...)`` asks a
person (the gold labels) about a share of the machine's answers (``--check``: one share for both answers, or two,
its "same"s then its "different"s; 1 checks every pair), random pairs, until ``MachineRates`` has seen
``--checks`` checked pairs; the machine's other answers count as unchecked; the estimate is its posterior mean.
Repeated over ``--repeats`` random draws of pairs and server errors. Written: ``chat_rates.json`` (each repeat's
estimates after 10, 20, ..., ``--checks`` checked pairs, and how many answers the machine gave by then) and
``chat_rates.png``.

    python experiments/chat_rates.py --check 1 --out experiments/results/chat_rates
    python experiments/chat_rates.py --check 0.2 0.05 --out experiments/results/chat_rates_stratified
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from jaxclust.active.chat import ChatEndpoint, ChatOracle, MachineFirst, MachineRates
from jaxclust.active.chat_fake import FakeChatServer


def one_run(labels: np.ndarray, args, seed: int) -> list[dict]:
    texts = [f"item {k}" for k in range(len(labels))]
    rng = np.random.default_rng([seed, 3])
    rows = []
    with FakeChatServer(
        texts, labels, false_same=args.false_same, false_different=args.false_different, seed=seed
    ) as server:
        machine = ChatOracle(texts, ChatEndpoint(server.url, "fake", api_key_env=None), n_replies=1)
        rates = MachineRates(prior=tuple(args.prior))
        check = args.check[0] if len(args.check) == 1 else {"must": args.check[0], "cannot": args.check[1]}
        routed = MachineFirst(
            machine,
            lambda i, j: "must" if labels[i] == labels[j] else "cannot",
            rates,
            check=check,
            sure=None,
        )
        seen: set[tuple[int, int]] = set()
        while rates.n_checked < args.checks:
            i, j = sorted(int(v) for v in rng.choice(len(labels), 2, replace=False))
            if (i, j) in seen:
                continue
            seen.add((i, j))
            routed.answer(i, j)
            if (
                rates.n_checked % 10 == 0
                and rates.n_checked
                and rates.n_checked != (rows[-1]["checked"] if rows else 0)
            ):
                rows.append(
                    {
                        "seed": seed,
                        "checked": rates.n_checked,
                        "false_same": rates.false_same,
                        "false_different": rates.false_different,
                        "machine_answers": len(routed.routes),
                    }
                )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("experiments/results/chat_rates"))
    ap.add_argument("--false-same", type=float, default=0.25)
    ap.add_argument("--false-different", type=float, default=0.05)
    ap.add_argument("--classes", type=int, default=3, help="equal classes of 100 items")
    ap.add_argument("--checks", type=int, default=100)
    ap.add_argument(
        "--check",
        type=float,
        nargs="+",
        default=[1.0],
        help="share of the machine's answers checked: one, or its 'same's then its 'different's",
    )
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument(
        "--prior", type=float, nargs=2, default=[1.0, 9.0], help="MachineRates' Beta prior (a, b)"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    labels = np.repeat(np.arange(args.classes), 100)
    rows = [r for s in range(args.repeats) for r in one_run(labels, args, s)]
    (args.out / "chat_rates.json").write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1) + "\n"
    )
    print(
        f"true rates: false same {args.false_same}, false different {args.false_different}; prior {args.prior}; "
        f"check {args.check}"
    )
    print(
        "checked | machine answers | false same: mean, mean |error|, within 0.05 | false different: mean, mean "
        "|error|, within 0.05 | both within 0.05"
    )
    for c in sorted({r["checked"] for r in rows}):
        at = [r for r in rows if r["checked"] == c]
        fs = np.array([r["false_same"] for r in at])
        fd = np.array([r["false_different"] for r in at])
        es, ed = np.abs(fs - args.false_same), np.abs(fd - args.false_different)
        answers = np.mean([r["machine_answers"] for r in at])
        print(
            f"{c:7d} | {answers:15.0f} | {fs.mean():.3f}, {es.mean():.3f}, {np.mean(es <= 0.05):.2f} | "
            f"{fd.mean():.3f}, {ed.mean():.3f}, {np.mean(ed <= 0.05):.2f} | {np.mean((es <= 0.05) & (ed <= 0.05)):.2f}"
        )
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.2))
    ax = fig.add_subplot()
    for key, truth in (("false_same", args.false_same), ("false_different", args.false_different)):
        cs = sorted({r["checked"] for r in rows})
        q = [np.percentile([r[key] for r in rows if r["checked"] == c], [10, 50, 90]) for c in cs]
        ax.plot(cs, [v[1] for v in q], label=f"{key.replace('_', ' ')} (true {truth})")
        ax.fill_between(cs, [v[0] for v in q], [v[2] for v in q], alpha=0.2)
        ax.axhline(truth, ls=":", c="k", lw=0.8)
    ax.set_xlabel("pairs checked by a person")
    ax.set_ylabel("estimated rate (median, 10-90 %)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out / "chat_rates.png", dpi=120)


if __name__ == "__main__":
    main()
