"""Reader and writer of the CoNLL-2011/2012 coreference column, so results can also go through ``scorer.pl``.

A file holds documents delimited by ``#begin document (name); part 000`` and ``#end document``; each non-blank
line is one token whose *last* column carries the coreference brackets, a blank line ends a sentence:

- ``(k)`` a one-token mention of entity k, ``(k`` a mention of k starts, ``k)`` a mention of k ends;
- several may share a cell, concatenated (``(1(2``, ``2)1)``) or separated by ``|``; ``-`` or ``_`` means
none;
- ``(k+j)`` "double antecedents" are discarded, as the reference scorer does.

Mentions are ``(start, end)`` token offsets in the document, inclusive, counting only token lines (exactly
what
the reference scorer matches on). Brackets are parsed as in ``lib/CorScorer.pm``: within a cell, first the
one-token mentions, then openings, then closings, each closing paired with the latest opening of the same
entity. The writer refuses mentions of one entity that cross or touch without nesting (e.g. ``(3, 5)`` and
``(5, 7)``): the bracket format cannot encode them unambiguously.

Examples
--------
>>> rows = ["d 0 0 John - (0)", "d 0 1 saw - -", "d 0 2 him - (0)"]
>>> text = "\\n".join(["#begin document (d); part 000", *rows, "#end document"])
>>> doc = parse_conll(text)[0]
>>> doc.clusters
[[(0, 0), (2, 2)]]
"""

from __future__ import annotations

import bisect
import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any

from jaxclust.errors import InvalidInputError
from jaxclust.metrics.coref import corpus_scores

__all__ = ["ConllDocument", "parse_conll", "read_conll", "write_conll", "score_conll", "format_coref_cells"]

Span = tuple[int, int]

_BEGIN = re.compile(r"^#\s*begin document (.*?)\s*$")
_END = re.compile(r"^#\s*end document")
_DOUBLE = re.compile(r"\(\d+\+\d+\)")
_ID = r"[^\s()|]+"
_SINGLE = re.compile(rf"\(({_ID})\)")
_OPEN = re.compile(rf"\(({_ID})")
_CLOSE = re.compile(rf"({_ID})\)")
_NAME = re.compile(r"^\((.*)\);\s*part\s+(\S+)$")


@dataclass(frozen=True)
class ConllDocument:
    """One document of a CoNLL coreference file.

    Attributes
    ----------
    name : str
        Everything after ``#begin document`` (e.g. ``"(bc/cctv/00/cctv_0001); part 000"``); documents of a key
        and a response file are matched on it.
    clusters : list of list of (int, int)
        Entities in order of first appearance; each a sorted list of inclusive token spans.
    entity_ids : list of str
        The bracket id of each entity in the file (``str(i)`` for documents built in Python).
    sentence_starts : tuple of int
        Token offset where each sentence starts.
    n_tokens : int
        Number of tokens.
    rows : list of list of str, optional
        The columns of each token line as read (the last column is the coreference cell); ``None`` for
        documents built from clusters, which are written with placeholder columns.
    """

    name: str
    clusters: list[list[Span]]
    entity_ids: list[str]
    sentence_starts: tuple[int, ...]
    n_tokens: int
    rows: list[list[str]] | None = field(default=None, repr=False, compare=False)

    def entities(self) -> list[set[Span]]:
        """The clustering as a list of sets of spans (the input of :mod:`jaxclust.metrics.coref`)."""
        return [set(c) for c in self.clusters]

    @property
    def mentions(self) -> list[Span]:
        """All mention spans, sorted."""
        return sorted({m for c in self.clusters for m in c})

    def sentence_of(self, token: int) -> int:
        """Index of the sentence containing ``token``."""
        return bisect.bisect_right(self.sentence_starts, token) - 1

    def with_clusters(self, clusters: Iterable[Iterable[Span]]) -> ConllDocument:
        """The same document (tokens, sentences, columns) with another clustering, e.g. a system response."""
        cl = _check_clusters(clusters, self.n_tokens, self.name)
        return replace(self, clusters=cl, entity_ids=[str(i) for i in range(len(cl))])

    @classmethod
    def from_clusters(
        cls,
        name: str,
        clusters: Iterable[Iterable[Span]],
        sentence_lengths: Sequence[int] | None = None,
        n_tokens: int | None = None,
        words: Sequence[str] | None = None,
    ) -> ConllDocument:
        """Build a document from spans; ``sentence_lengths`` (or ``n_tokens`` for one sentence) gives the
        tokens.

        ``words`` (one per token) fill the word column when written; otherwise ``-``.
        """
        if sentence_lengths is None:
            if n_tokens is None:
                raise InvalidInputError("from_clusters: give sentence_lengths or n_tokens")
            sentence_lengths = [n_tokens] if n_tokens else []
        lengths = [int(s) for s in sentence_lengths]
        if any(s <= 0 for s in lengths):
            raise InvalidInputError(
                f"sentence_lengths: every sentence needs at least one token, got {lengths}"
            )
        total = sum(lengths)
        if n_tokens is not None and n_tokens != total:
            raise InvalidInputError(f"n_tokens: {n_tokens} differs from sum(sentence_lengths) = {total}")
        starts = tuple(int(sum(lengths[:i])) for i in range(len(lengths)))
        rows = None
        if words is not None:
            if len(words) != total:
                raise InvalidInputError(f"words: expected {total} words (one per token), got {len(words)}")
            rows = _placeholder_rows(name, starts, total, words)
        cl = _check_clusters(clusters, total, name)
        return cls(name, cl, [str(i) for i in range(len(cl))], starts, total, rows)


def _check_clusters(clusters: Iterable[Iterable[Span]], n_tokens: int, doc: str) -> list[list[Span]]:
    out = []
    for e, entity in enumerate(clusters):
        spans = []
        for m in entity:
            try:
                s, t = (int(v) for v in m)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(
                    f"document {doc!r}: entity {e} has {m!r}, expected a (start, end) span"
                ) from exc
            if not 0 <= s <= t < n_tokens:
                raise InvalidInputError(
                    f"document {doc!r}: entity {e} has span ({s}, {t}) outside tokens "
                    f"0..{n_tokens - 1} or with end < start"
                )
            spans.append((s, t))
        spans = sorted(set(spans))
        if spans:
            out.append(spans)
    return out


def _parse_cell(cell: str) -> tuple[list[str], list[str], list[str]]:
    """(one-token ids, opening ids, closing ids) of a coreference cell, in the reference's order."""
    if cell in ("-", "_", ""):
        return [], [], []
    cell = _DOUBLE.sub("", cell)
    singles = _SINGLE.findall(cell)
    cell = _SINGLE.sub("", cell)
    opens = _OPEN.findall(cell)
    cell = _OPEN.sub("", cell)
    closes = _CLOSE.findall(cell)
    return singles, opens, closes


def _finish(
    name: str, spans_by_id: dict, order: list[str], sentence_starts: list[int], rows: list
) -> ConllDocument:
    clusters = [sorted(set(spans_by_id[i])) for i in order]
    return ConllDocument(name, clusters, list(order), tuple(sentence_starts), len(rows), rows)


def _parse_lines(lines: Iterable[str], source: str) -> list[ConllDocument]:
    docs: list[ConllDocument] = []
    name = None
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if lineno == 1:
            line = line.removeprefix("\ufeff")  # a UTF-8 byte-order mark is not part of the first line
        begin = _BEGIN.match(line)
        if begin:
            if name is not None:
                raise InvalidInputError(
                    f"{source}:{lineno}: '#begin document' inside document {name!r} (missing '#end document')"
                )
            name = begin.group(1)
            spans: dict[str, list[Span]] = {}
            order: list[str] = []
            open_at: dict[str, list[tuple[int, int]]] = {}
            rows: list[list[str]] = []
            starts: list[int] = []
            new_sentence = True
            continue
        if name is None:
            continue  # text outside documents is ignored, as by the reference scorer
        if _END.match(line):
            for ent, stack in open_at.items():
                if stack:
                    tok, ln = stack[-1]
                    raise InvalidInputError(
                        f"{source}:{ln}: document {name!r}: mention of entity {ent} opened at token "
                        f"{tok} never closes"
                    )
            docs.append(_finish(name, spans, order, starts, rows))
            name = None
            continue
        if not line.strip():
            new_sentence = True
            continue
        if line.lstrip().startswith("#"):
            continue  # comment lines (e.g. '# sent_id') carry no tokens
        cols = line.split()
        t = len(rows)
        if new_sentence:
            starts.append(t)
            new_sentence = False
        rows.append(cols)
        singles, opens, closes = _parse_cell(cols[-1])
        for ent in (*singles, *opens, *closes):
            if ent not in spans:
                spans[ent] = []
                order.append(ent)
        for ent in singles:
            spans[ent].append((t, t))
        for ent in opens:
            open_at.setdefault(ent, []).append((t, lineno))
        for ent in closes:
            stack = open_at.get(ent)
            if not stack:
                raise InvalidInputError(
                    f"{source}:{lineno}: document {name!r}: entity {ent} closes a mention at token "
                    f"{t} that was never opened"
                )
            start, _ = stack.pop()
            spans[ent].append((start, t))
    if name is not None:
        raise InvalidInputError(f"{source}: document {name!r} has no '#end document' line")
    return docs


def parse_conll(text: str) -> list[ConllDocument]:
    """Parse CoNLL-2012 text (the content of a file) into documents."""
    return _parse_lines(text.splitlines(), "<text>")


def read_conll(source: str | os.PathLike | IO[str]) -> list[ConllDocument]:
    """Read every document of a CoNLL-2011/2012 file (path or open text file, UTF-8).

    A missing file, a folder, or bytes that are not UTF-8 raise ``InvalidInputError`` naming the file (and the
    line, for bad bytes).
    """
    if hasattr(source, "read"):
        name = str(getattr(source, "name", "<file>"))
        return _parse_lines(_checked_lines(source, name), name)
    try:
        path = os.fspath(source)
    except TypeError as exc:
        raise InvalidInputError(
            f"source: expected a path or an open text file, got {type(source).__name__}"
        ) from exc
    if not os.path.exists(path):
        raise InvalidInputError(f"source: no such file {path!r}")
    if os.path.isdir(path):
        raise InvalidInputError(f"source: {path!r} is a folder, not a CoNLL file")
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InvalidInputError(
            f"{path}:{line}: not valid UTF-8 ({exc.reason} at byte {exc.start}); CoNLL files are read as UTF-8"
        ) from None
    return _parse_lines(io.StringIO(text, newline=None), path)  # universal newlines, as open() in text mode


def _checked_lines(fh: Iterable, name: str) -> Iterable[str]:
    """The lines of an open file as text; bytes are decoded as UTF-8, and bad bytes raise InvalidInputError
    naming the file and line."""
    lineno = 0
    it = iter(fh)
    while True:
        try:
            line = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"{name}: not valid UTF-8 at or after line {lineno + 1} ({exc.reason}); is the file UTF-8?"
            ) from None
        lineno += 1
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInputError(f"{name}:{lineno}: not valid UTF-8 ({exc.reason})") from None
        yield line


def _check_nesting(spans: list[Span], entity: str, doc: str) -> None:
    """Mentions of one entity must be disjoint or nested, else the brackets are ambiguous."""
    stack: list[Span] = []
    for s, t in sorted(spans, key=lambda m: (m[0], -m[1])):
        while stack and stack[-1][1] < s:
            stack.pop()
        if stack and stack[-1][1] < t:
            raise InvalidInputError(
                f"document {doc!r}: entity {entity} has mentions {stack[-1]} and {(s, t)} that "
                f"overlap without "
                "nesting; the CoNLL bracket format cannot represent them"
            )
        stack.append((s, t))


def format_coref_cells(
    clusters: Sequence[Sequence[Span]], n_tokens: int, ids: Sequence[str] | None = None, doc: str = ""
) -> list[str]:
    """The coreference cell of every token for a clustering (``-`` where no bracket).

    Parameters
    ----------
    clusters : sequence of sequences of (start, end)
    n_tokens : int
    ids : sequence of str, optional
        Bracket id of each entity (default ``0, 1, ...``).
    """
    ids = [str(i) for i in range(len(clusters))] if ids is None else [str(i) for i in ids]
    opens: list[list[tuple[int, str]]] = [[] for _ in range(n_tokens)]
    singles: list[list[str]] = [[] for _ in range(n_tokens)]
    closes: list[list[tuple[int, str]]] = [[] for _ in range(n_tokens)]
    for ent, spans in zip(ids, clusters, strict=True):
        spans = sorted(set((int(s), int(t)) for s, t in spans))
        _check_nesting(spans, ent, doc)
        for s, t in spans:
            if not 0 <= s <= t < n_tokens:
                raise InvalidInputError(
                    f"document {doc!r}: entity {ent} has span ({s}, {t}) outside tokens 0..{n_tokens - 1}"
                )
            if s == t:
                singles[s].append(ent)
            else:
                opens[s].append((t, ent))
                closes[t].append((s, ent))
    cells = []
    for i in range(n_tokens):
        parts = [f"({e}" for _, e in sorted(opens[i], key=lambda x: -x[0])]  # outer mentions open first
        parts += [f"({e})" for e in singles[i]]
        parts += [f"{e})" for _, e in sorted(closes[i], key=lambda x: -x[0])]  # inner mentions close first
        cells.append("|".join(parts) if parts else "-")
    return cells


def _placeholder_rows(
    name: str, starts: Sequence[int], n_tokens: int, words: Sequence[str] | None = None
) -> list[list[str]]:
    """CoNLL-2012 style columns (doc, part, word#, word, POS, parse, lemma, frame, sense, speaker, NE,
    coref)."""
    m = _NAME.match(name)
    doc_id, part = (m.group(1), m.group(2)) if m else (name.replace(" ", "_") or "-", "0")
    bounds = list(starts) + [n_tokens]
    rows = []
    for s in range(len(starts)):
        for j, t in enumerate(range(bounds[s], bounds[s + 1])):
            # a column may not contain whitespace: the reader splits on it
            word = re.sub(r"\s", "_", str(words[t])) if words is not None else "-"
            rows.append(
                [
                    doc_id,
                    str(int(part)) if part.isdigit() else part,
                    str(j),
                    word or "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    "*",
                    "-",
                ]
            )
    return rows


def write_conll(documents: Iterable[ConllDocument], dest: str | os.PathLike | IO[str]) -> None:
    """Write documents in CoNLL-2012 format, with each document's ``clusters`` in the last column.

    Documents read from a file keep their columns (only the coreference cell is replaced); documents built
    with :meth:`ConllDocument.from_clusters` get placeholder columns. Output is tab-separated.
    """
    if hasattr(dest, "write"):
        _write(documents, dest)
        return
    with open(os.fspath(dest), "w", encoding="utf-8") as fh:
        _write(documents, fh)


def _write(documents: Iterable[ConllDocument], fh: IO[str]) -> None:
    for doc in documents:
        rows = (
            doc.rows
            if doc.rows is not None
            else _placeholder_rows(doc.name, doc.sentence_starts, doc.n_tokens)
        )
        cells = format_coref_cells(doc.clusters, doc.n_tokens, doc.entity_ids, doc.name)
        starts = set(doc.sentence_starts)
        fh.write(f"#begin document {doc.name}\n")
        for t, (cols, cell) in enumerate(zip(rows, cells, strict=True)):
            if t in starts and t > 0:
                fh.write("\n")
            fh.write("\t".join([*cols[:-1], cell]) + "\n")
        if doc.n_tokens:
            fh.write("\n")
        fh.write("#end document\n")


def _as_docs(x: Any) -> list[ConllDocument]:
    if isinstance(x, str | os.PathLike) or hasattr(x, "read"):
        return read_conll(x)
    return list(x)


def score_conll(key: Any, response: Any) -> dict[str, Any]:
    """Corpus scores (see :func:`jaxclust.metrics.coref.corpus_scores`) of a response against a key.

    ``key`` and ``response`` are paths, open files or lists of :class:`ConllDocument`; documents are matched
    by
    name, a key document missing from the response scores against an empty response, and response documents
    absent from the key are ignored (as the reference scorer does).
    """

    keys = _as_docs(key)
    by_name = {d.name: d for d in _as_docs(response)}
    responses = [by_name[d.name].entities() if d.name in by_name else [] for d in keys]
    return corpus_scores([d.entities() for d in keys], responses)
