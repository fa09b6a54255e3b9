"""Posts and articles clustered by topic or by author: 20 Newsgroups, NPS Chat, BBC News."""

from __future__ import annotations

import collections
import functools
import gzip
import os
import re
from collections.abc import Sequence

import numpy as np

from jaxclust.datasets.base import (
    Dataset,
    check_choice,
    check_setting,
    dataset_folder,
    encode_labels,
    read_csv_rows,
    read_jsonl,
)
from jaxclust.validation import Int

__all__ = [
    "load_newsgroups",
    "load_nps_chat",
    "load_bbc_news",
    "strip_header",
    "strip_footer",
    "strip_quotes",
]

NEWSGROUPS_FOLDER = "newsgroups20_bydate"
_NEWSGROUPS_FILE = "20news_bydate.jsonl.gz"
NPS_FOLDER = "nps_chat"
_NPS_FILE = "posts.tsv"
BBC_FOLDER = "bbc_news"
_BBC_FILE = "bbc_news.jsonl"
_REMOVABLE = ("headers", "footers", "quotes")

# Lines that quote another post or introduce a quotation ("... writes:", "In article <...>").
_QUOTE_LINE = re.compile(r"writes in|writes:|wrote:|says:|said:|^In article|^Quoted from|^[|>]")


def strip_header(text: str) -> str:
    """Drop the Usenet header block: everything up to and including the first blank line."""
    head, sep, body = text.partition("\n\n")
    return body


def strip_footer(text: str) -> str:
    """Drop a trailing signature: everything from the last line that is blank or only dashes.

    Surrounding whitespace is ignored; the text is returned unchanged when no such line follows the first.
    """
    lines = text.strip().split("\n")
    cut = next((i for i in range(len(lines) - 1, -1, -1) if not lines[i].strip().strip("-")), 0)
    return "\n".join(lines[:cut]) if cut > 0 else text


def strip_quotes(text: str) -> str:
    """Drop quoted lines (starting with ``>`` or ``|``) and lines announcing a quotation (``... writes:``)."""
    return "\n".join(line for line in text.split("\n") if not _QUOTE_LINE.search(line))


def _drop_from_header(text: str) -> str:
    """Remove ``From:`` lines of the header block (they name the author)."""
    head, sep, body = text.partition("\n\n")
    head = "\n".join(line for line in head.split("\n") if not line.startswith("From:"))
    return head + sep + body


@functools.lru_cache(maxsize=2)
def _read_newsgroups(path: str) -> tuple[dict, ...]:
    return read_jsonl(
        path, opener=gzip.open, required=("split", "from", "label", "newsgroup", "doc_id", "subject", "text")
    )


# (path, removed parts, drop From:) -> {record index: cleaned text}; filled lazily, only for posts asked for
_CLEANED: dict[tuple[str, tuple[str, ...], bool], dict[int, str]] = {}


def _clean_newsgroups(path: str, remove: tuple[str, ...], drop_from: bool, keep: list[int]) -> list[str]:
    """Texts of posts ``keep`` minus the ``remove`` parts (and the From: line if ``drop_from``); cached."""
    records = _read_newsgroups(path)
    cache = _CLEANED.setdefault((path, remove, drop_from), {})
    for i in keep:
        if i not in cache:
            text = records[i]["text"]
            if drop_from:
                text = _drop_from_header(text)
            if "headers" in remove:
                text = strip_header(text)
            if "footers" in remove:
                text = strip_footer(text)
            if "quotes" in remove:
                text = strip_quotes(text)
            cache[i] = text
    return [cache[i] for i in keep]


def load_newsgroups(
    labels: str = "topic",
    strip_headers: bool = True,
    remove: Sequence[str] | None = None,
    subset: str = "all",
    min_posts: int = 20,
    data_dir: str | os.PathLike | None = None,
) -> Dataset:
    """20 Newsgroups ("bydate", 18,846 posts), for clustering posts by topic or by author.

    Parameters
    ----------
    labels : {"topic", "author"}
        Target labeling. ``"topic"``: the 20 groups (ids in alphabetical order, as scikit-learn).
        ``"author"``: only posts whose ``From:`` author wrote at least ``min_posts`` posts (in ``subset``) are
        kept, and the ``From:`` header line is always removed (it names the label).
    strip_headers : bool
        If True (and ``remove`` is None), remove headers, signatures and quotes, as scikit-learn's
        ``fetch_20newsgroups(remove=("headers", "footers", "quotes"))``: headers leak the label.
    remove : sequence of {"headers", "footers", "quotes"}, optional
        Exact parts to remove, overriding ``strip_headers``.
    subset : {"all", "train", "test"}
        The bydate split (11,314 train / 7,532 test posts).
    min_posts : int
        Minimum posts per author for ``labels="author"`` (20 -> 59 authors, 2,000 posts over ``"all"``).
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    Dataset
        ``texts``; ``labels["topic"]`` and ``labels["author"]`` (authors numbered in sorted order of their
        ``From:`` string); ``item_names`` = ``"<split>/<group>/<doc_id>"``; ``extra``: ``split``, ``subject``.
    """
    check_choice(labels, "labels", ("topic", "author"))
    check_choice(subset, "subset", ("all", "train", "test"))
    if remove is None:
        remove = _REMOVABLE if strip_headers else ()
    remove = tuple(remove) if not isinstance(remove, str) else (remove,)
    for part in remove:
        check_choice(part, "remove", _REMOVABLE)
    if labels == "author":
        check_setting(min_posts, "min_posts", Int(1))
    folder = dataset_folder(NEWSGROUPS_FOLDER, [_NEWSGROUPS_FILE], data_dir)
    path = str(folder / _NEWSGROUPS_FILE)
    records = _read_newsgroups(path)
    keep = [i for i, r in enumerate(records) if subset in ("all", r["split"])]
    if labels == "author":
        counts = collections.Counter(records[i]["from"] for i in keep)
        keep = [i for i in keep if counts[records[i]["from"]] >= min_posts]
    rows = [records[i] for i in keep]
    texts = _clean_newsgroups(path, tuple(p for p in _REMOVABLE if p in remove), labels == "author", keep)
    group_names = {r["label"]: r["newsgroup"] for r in records}
    topic = np.array([r["label"] for r in rows], dtype=np.int64)
    author, author_names = encode_labels([r["from"] for r in rows])
    return Dataset(
        name=f"newsgroups/{subset}/{labels}",
        X=None,
        texts=texts,
        labels={"topic": topic, "author": author},
        label_names={"topic": [group_names[i] for i in range(len(group_names))], "author": author_names},
        item_names=[f"{r['split']}/{r['newsgroup']}/{r['doc_id']}" for r in rows],
        feature_names=None,
        target=labels,
        description=(
            "20 Newsgroups, bydate version (Ken Lang's collection), Usenet posts of 20 groups"
            + (f"; removed: {', '.join(remove)}" if remove else "; raw posts with headers")
            + (
                f"; posts of authors with >= {min_posts} posts, From: lines removed"
                if labels == "author"
                else ""
            )
            + "."
        ),
        source="20news-bydate (Ken Lang), the archive scikit-learn's fetch_20newsgroups downloads",
        license="None stated (Usenet posts, copyright of their authors); research/evaluation use only.",
        extra={"split": [r["split"] for r in rows], "subject": [r["subject"] for r in rows]},
    )


@functools.lru_cache(maxsize=2)
def _read_tsv(path: str) -> tuple[dict, ...]:
    return tuple(
        read_csv_rows(
            path, delimiter="\t", required=("user", "dialog_act", "text", "session", "post_index", "tokens")
        )
    )


def load_nps_chat(
    label: str = "user",
    min_posts: int = 1,
    exclude_system: bool = False,
    data_dir: str | os.PathLike | None = None,
) -> Dataset:
    """NPS Chat Corpus 1.0: 10,567 chat posts of 15 sessions with user ids and dialogue acts.

    Parameters
    ----------
    label : {"user", "dialog_act"}
        Target labeling: posts by (session-prefixed, privacy-masked) user (1,377), or by dialogue act (15).
    min_posts : int
        Keep only posts of users with at least this many posts (50 -> 43 users), counted before
        ``exclude_system``.
    exclude_system : bool
        Drop the 2,632 ``System`` posts (joins, parts, bot commands).
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    Dataset
        ``texts`` = raw posts; ``labels["user"]``, ``labels["dialog_act"]``; ``item_names`` =
        ``"<session>/<post_index>"``; ``extra``: ``session``, ``post_index`` (n,), ``tokens``.
    """
    check_choice(label, "label", ("user", "dialog_act"))
    check_setting(min_posts, "min_posts", Int(1))
    folder = dataset_folder(NPS_FOLDER, [_NPS_FILE], data_dir)
    rows = _read_tsv(str(folder / _NPS_FILE))
    counts = collections.Counter(r["user"] for r in rows)
    rows = [
        r
        for r in rows
        if counts[r["user"]] >= min_posts and not (exclude_system and r["dialog_act"] == "System")
    ]
    users, user_names = encode_labels([r["user"] for r in rows])
    acts, act_names = encode_labels([r["dialog_act"] for r in rows])
    return Dataset(
        name="nps_chat",
        X=None,
        texts=[r["text"] for r in rows],
        labels={"user": users, "dialog_act": acts},
        label_names={"user": user_names, "dialog_act": act_names},
        item_names=[f"{r['session']}/{r['post_index']}" for r in rows],
        feature_names=None,
        target=label,
        description=(
            "NPS Chat Corpus release 1.0 (Forsyth, Lin & Martell 2008): posts of 15 age-specific chat "
            "sessions (2006) with privacy-masked user ids (session-prefixed) and dialogue-act labels."
        ),
        source="Naval Postgraduate School NPS Chat Corpus 1.0 via nltk_data nps_chat.zip",
        license="Non-commercial, non-profit educational and research use only; not redistributed.",
        extra={
            "session": [r["session"] for r in rows],
            "post_index": np.array([int(r["post_index"]) for r in rows], dtype=np.int64),
            "tokens": [r["tokens"].split(" ") if r["tokens"] else [] for r in rows],
        },
    )


@functools.lru_cache(maxsize=2)
def _read_jsonl(path: str) -> tuple[dict, ...]:
    return read_jsonl(path, required=("id", "label", "category", "text", "title"))


def load_bbc_news(deduplicate: bool = False, data_dir: str | os.PathLike | None = None) -> Dataset:
    """BBC News (Greene & Cunningham 2006): 2,225 articles in 5 topics.

    Topics: business, entertainment, politics, sport, tech.

    Parameters
    ----------
    deduplicate : bool
        Drop exact duplicate texts, keeping the first (the standard release keeps them).
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    Dataset
        ``texts`` (title line, blank line, body), ``labels["topic"]``, ``item_names`` =
        ``"<category>/<file>"``,
        ``extra["title"]``.
    """
    folder = dataset_folder(BBC_FOLDER, [_BBC_FILE], data_dir)
    rows = _read_jsonl(str(folder / _BBC_FILE))
    if deduplicate:
        seen: set[str] = set()
        kept = []
        for r in rows:
            if r["text"] not in seen:
                seen.add(r["text"])
                kept.append(r)
        rows = tuple(kept)
    names = {r["label"]: r["category"] for r in _read_jsonl(str(folder / _BBC_FILE))}
    return Dataset(
        name="bbc_news",
        X=None,
        texts=[r["text"] for r in rows],
        labels={"topic": np.array([r["label"] for r in rows], dtype=np.int64)},
        label_names={"topic": [names[i] for i in range(len(names))]},
        item_names=[r["id"] for r in rows],
        feature_names=None,
        target="topic",
        description=(
            "BBC News articles 2004-2005 in 5 topical classes (Greene & Cunningham 2006)"
            + ("; exact duplicate texts removed." if deduplicate else "; 98 exact duplicates kept.")
        ),
        source="D. Greene & P. Cunningham, ICML 2006 (mlg.ucd.ie/datasets/bbc.html), via moztom/bbc_ml",
        license="Copyright BBC; research use by the dataset authors' terms; internal evaluation only, never "
        "redistributed.",
        extra={"title": [r["title"] for r in rows]},
    )
