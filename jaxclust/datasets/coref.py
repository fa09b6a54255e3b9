"""Coreference corpora with gold mentions: LitBank and GUM (folder ``coref/``), as lists of ``CorefDocument``.

Both corpora annotate singletons; mentions are in document order (start ascending, end descending), the order
L3M's left-linking inference walks them. Entity ids are numbered by first mention within each document.
"""

from __future__ import annotations

import functools
import json
import os

import numpy as np

from jaxclust.datasets.base import (
    CorefDocument,
    Mention,
    check_choice,
    dataset_folder,
    file_errors,
    read_jsonl,
    read_text,
)

__all__ = ["load_litbank", "load_gum"]

LITBANK_FOLDER = "coref/litbank"
GUM_FOLDER = "coref/gum"
_LITBANK_SPLITS = ("train", "dev", "test")
_GUM_SPLITS = ("train", "dev", "test", "test2")
_LITBANK_SOURCE = (
    "LitBank coreference layer (dbamman/litbank, Bamman, Lewke & Mansoor 2020, LREC); official "
    "10-fold splits of dbamman/lrec2020-coref"
)
_LITBANK_LICENSE = "CC BY 4.0 (annotations); texts are public-domain Project Gutenberg works"
_GUM_SOURCE = (
    "GUM v11.1 (amir-zeldes/gum, Zeldes 2017) dep/*.conllu entity layer + gold UD syntax; official splits"
)


def _parse(path: str, fn) -> tuple[CorefDocument, ...]:
    """``fn`` over the records of a JSON-lines file; a bad record raises InvalidInputError naming it."""
    out = []
    for k, rec in enumerate(read_jsonl(path), start=1):
        with file_errors(f"{path} (record {k})"):
            out.append(fn(rec))
    return tuple(out)


def _sentences(words: list[str], offsets: list[list[int]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(words[a:b]) for a, b in offsets)


def _sentence_index(offsets: list[list[int]], starts: list[int]) -> np.ndarray:
    first = np.array([a for a, _ in offsets], dtype=np.int64)
    return np.searchsorted(first, np.asarray(starts, dtype=np.int64), side="right") - 1


def _parse_feats(feats: str | None) -> tuple[tuple[str, str], ...]:
    if not feats:
        return ()
    return tuple(tuple(kv.split("=", 1)) for kv in feats.split("|") if "=" in kv)


def _litbank_doc(rec: dict) -> CorefDocument:
    words = rec["tokens"]
    ms = rec["mentions"]
    sent = _sentence_index(rec["sentences"], [m["start"] for m in ms])
    mentions = tuple(
        Mention(
            start=m["start"],
            end=m["end"],
            text=" ".join(words[m["start"] : m["end"]]),
            entity=m["entity"],
            sentence=int(s),
            mention_type=m.get("mention_type"),
            entity_type=m.get("entity_type"),
            mention_id=m.get("id"),
        )
        for m, s in zip(ms, sent, strict=True)
    )
    return CorefDocument(
        doc_id=rec["doc_id"],
        tokens=_sentences(words, rec["sentences"]),
        mentions=mentions,
        genre="fiction",
        license=_LITBANK_LICENSE,
        source=_LITBANK_SOURCE,
        extra={
            "relations": tuple((r["type"], r["mention"], r["target"]) for r in rec.get("relations", ())),
            "tsv_coref_labels": tuple(m.get("tsv_coref_label") for m in ms),
        },
    )


def _gum_doc(rec: dict) -> CorefDocument:
    words, upos, feats = rec["tokens"], rec["upos"], rec["feats"]
    ms = rec["mentions"]
    sent = _sentence_index(rec["sentences"], [m["start"] for m in ms])
    mentions = tuple(
        Mention(
            start=m["start"],
            end=m["end"],
            text=" ".join(words[m["start"] : m["end"]]),
            entity=m["entity"],
            sentence=int(s),
            head=m["head"],
            head_word=words[m["head"]],
            upos=upos[m["head"]],
            feats=_parse_feats(feats[m["head"]]),
            entity_type=m.get("etype"),
            infstat=m.get("infstat"),
            link=m.get("link"),
            identity=m.get("identity"),
        )
        for m, s in zip(ms, sent, strict=True)
    )
    extra = {k: tuple(rec[k]) for k in ("lemmas", "upos", "xpos", "feats", "heads", "deprels")}
    extra["speakers"] = None if rec.get("speakers") is None else tuple(rec["speakers"])
    return CorefDocument(
        doc_id=rec["doc_id"],
        tokens=_sentences(words, rec["sentences"]),
        mentions=mentions,
        genre=rec["genre"],
        license=f"annotations CC BY 4.0; text: {rec.get('text_license') or 'not stated'}",
        source=f"{_GUM_SOURCE}; text from {rec.get('source_url') or 'unknown'}",
        extra=extra,
    )


@functools.lru_cache(maxsize=8)
def _litbank_split(path: str) -> tuple[CorefDocument, ...]:
    return _parse(path, _litbank_doc)


@functools.lru_cache(maxsize=8)
def _gum_split(path: str) -> tuple[CorefDocument, ...]:
    return _parse(path, _gum_doc)


def load_litbank(
    split: str = "train", fold: int = 0, data_dir: str | os.PathLike | None = None
) -> list[CorefDocument]:
    """LitBank coreference documents (100 fiction excerpts of ~2,000 words), gold mentions and entities.

    Parameters
    ----------
    split : {"train", "dev", "test", "all"}
        Official split of fold ``fold`` (80 / 10 / 10 documents), or all 100 documents.
    fold : int in 0..9
        Fold of the official 10-fold cross-validation (Bamman et al. 2020); fold 0 is the default split.
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    list of CorefDocument
        Mentions carry ``mention_type`` (PROP/NOM/PRON), ``entity_type`` (ACE: PER, LOC, FAC, GPE, VEH,
        ORG) and ``mention_id``; ``head``/``upos``/``feats`` are None (LitBank has no syntax).
        ``extra["relations"]`` holds COP/APPOS links as ``(type, mention index, target index)``.
    """
    check_choice(split, "split", _LITBANK_SPLITS + ("all",))
    check_choice(fold, "fold", tuple(range(10)))
    files = [f"{s}.jsonl" for s in _LITBANK_SPLITS] + ["folds.json"]
    folder = dataset_folder(LITBANK_FOLDER, files, data_dir)
    if fold == 0 and split != "all":
        return list(_litbank_split(str(folder / f"{split}.jsonl")))
    docs = {d.doc_id: d for s in _LITBANK_SPLITS for d in _litbank_split(str(folder / f"{s}.jsonl"))}
    if split == "all":
        return list(docs.values())
    path = folder / "folds.json"
    with file_errors(path):
        ids = json.loads(read_text(path))[str(fold)][split]
        return [docs[i] for i in ids]


def load_gum(split: str = "train", data_dir: str | os.PathLike | None = None) -> list[CorefDocument]:
    """GUM coreference documents with gold UD syntax (Reddit documents excluded: their text is not public).

    Parameters
    ----------
    split : {"train", "dev", "test", "test2"}
        Official GUM partitions (177 / 30 / 30 documents); ``"test2"`` = 26 out-of-domain GENTLE documents.
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    list of CorefDocument
        Mentions carry ``head`` (document token index of the head), ``head_word``, ``upos`` and ``feats`` (UD
        morphology of the head), ``entity_type`` (GUM etype), ``infstat``, ``link``, ``identity``;
        documents carry the token-level UD layers in ``extra`` and ``genre``. Some texts are CC BY-NC-SA:
        see ``license``.
    """
    check_choice(split, "split", _GUM_SPLITS)
    folder = dataset_folder(GUM_FOLDER, [f"{split}.jsonl"], data_dir)
    return list(_gum_split(str(folder / f"{split}.jsonl")))
