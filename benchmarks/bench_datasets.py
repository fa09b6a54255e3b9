"""Time the dataset loaders, and our 20 Newsgroups header/signature/quote removal against scikit-learn's.

Usage: ``python benchmarks/bench_datasets.py [--data-dir DIR] [--repeats 5]``

Prints one line per measurement: cold = first call in this process (file parse included), warm = a later call
(parsed files cached in-process), and for the like-for-like comparisons the ratio ours / peer.
The peer for text cleaning is scikit-learn's ``strip_newsgroup_{header,footer,quoting}`` (what
``fetch_20newsgroups(remove=...)`` runs), applied to the same 18,846 raw posts; the peer for the embedded
sets is ``sklearn.datasets.load_*``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("JAXCLUST_DATA", "../shared/data"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import sklearn.datasets as skd
    from sklearn.datasets import _twenty_newsgroups as sk20

    from jaxclust import datasets as D
    from jaxclust.datasets.posts import strip_footer, strip_header, strip_quotes

    dd = args.data_dir
    loaders = [
        ("load_verbs_general(full)", lambda: D.load_verbs_general("full", data_dir=dd)),
        ("load_verbs_biomed", lambda: D.load_verbs_biomed(data_dir=dd)),
        ("load_senseval2(line)", lambda: D.load_senseval2("line", data_dir=dd)),
        ("load_subjectivity", lambda: D.load_subjectivity(data_dir=dd)),
        ("load_newsgroups(topic, stripped)", lambda: D.load_newsgroups(data_dir=dd)),
        ("load_nps_chat", lambda: D.load_nps_chat(data_dir=dd)),
        ("load_bbc_news", lambda: D.load_bbc_news(data_dir=dd)),
        ("load_litbank(all)", lambda: D.load_litbank("all", data_dir=dd)),
        ("load_gum(train)", lambda: D.load_gum("train", data_dir=dd)),
        (
            "load_clustering_benchmark(sipu, birch1)",
            lambda: D.load_clustering_benchmark("sipu", "birch1", data_dir=dd),
        ),
    ]
    print(f"{'loader':45s} {'cold s':>8s} {'warm s':>8s}")
    for name, fn in loaders:
        t0 = time.perf_counter()
        fn()
        cold = time.perf_counter() - t0
        warm = _best(fn, args.repeats)
        print(f"{name:45s} {cold:8.3f} {warm:8.3f}")

    raw = D.load_newsgroups(strip_headers=False, data_dir=dd).texts
    ours = lambda: [strip_quotes(strip_footer(strip_header(t))) for t in raw]
    peer = lambda: [
        sk20.strip_newsgroup_quoting(sk20.strip_newsgroup_footer(sk20.strip_newsgroup_header(t))) for t in raw
    ]
    assert ours() == peer()
    t_ours, t_peer = _best(ours, args.repeats), _best(peer, args.repeats)
    print(
        f"\nstrip headers+footers+quotes, {len(raw)} posts: ours {t_ours:.3f} s, "
        f"scikit-learn {t_peer:.3f} s, ratio ours/peer {t_ours / t_peer:.2f}"
    )

    for name, ours_fn, peer_fn in [
        ("iris", D.load_iris, skd.load_iris),
        ("wine", D.load_wine, skd.load_wine),
        ("digits", D.load_digits, skd.load_digits),
    ]:
        np.testing.assert_array_equal(ours_fn().X, peer_fn().data)
        t_ours, t_peer = _best(ours_fn, args.repeats), _best(peer_fn, args.repeats)
        print(
            f"load_{name}: ours {t_ours * 1e3:.2f} ms, sklearn {t_peer * 1e3:.2f} ms, "
            f"ratio ours/peer {t_ours / t_peer:.2f}"
        )


if __name__ == "__main__":
    main()
