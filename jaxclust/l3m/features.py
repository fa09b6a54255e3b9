"""Pair features for L3M: coreference mention pairs and forum/chat posts, vectorised with NumPy and cached.

Every extractor returns window-layout features ``(m, A, F)`` (see :mod:`jaxclust.l3m.document`): entry ``[i,
a]`` describes (item ``i``, antecedent ``j = i - 1 - a``). Per-item attributes are computed once (a loop over
items, not pairs) and pair features are broadcast comparisons of attribute arrays, or entries of ``m x m``
matrices built by matrix products (token overlap), gathered through the antecedent index.

Coreference features (binary, stored as ``uint8``): exact / content-word / subset / head / token-overlap
string
matches, pronoun identity, mention-type pairs (pronoun, proper, nominal), number / gender / person agreement
(from
pronoun and title word lists, and UD morphology when the corpus has it, as GUM does), entity type, nesting,
apposition / copula cues (LitBank COP/APPOS relations, UD ``appos`` in GUM), quotation context, distance in
mentions
and sentences, and conjunctions of the anaphor's type with the main cues (a linear scorer needs them).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from jaxclust.l3m.document import antecedent_index

__all__ = ["coref_features", "COREF_FEATURE_NAMES", "post_features", "POST_FEATURE_NAMES", "clear_cache"]

# --------------------------------------------------------------------------------------------- word lists
_PRON = {
    # word: (number 1 sg / 2 pl / 0 unknown, gender 1 masc / 2 fem / 3 neut / 0 unknown, person 1/2/3)
    **{w: (1, 1, 3) for w in ("he", "him", "his", "himself")},
    **{w: (1, 2, 3) for w in ("she", "her", "hers", "herself")},
    **{w: (1, 3, 3) for w in ("it", "its", "itself")},
    **{w: (2, 0, 3) for w in ("they", "them", "their", "theirs", "themselves", "themself")},
    **{w: (1, 0, 1) for w in ("i", "me", "my", "mine", "myself")},
    **{w: (2, 0, 1) for w in ("we", "us", "our", "ours", "ourselves")},
    **{w: (0, 0, 2) for w in ("you", "your", "yours", "yourself", "yourselves", "ye")},
    **{w: (1, 0, 2) for w in ("thou", "thee", "thy", "thine", "thyself")},
    **{
        w: (0, 0, 3)
        for w in (
            "who",
            "whom",
            "whose",
            "which",
            "that",
            "this",
            "these",
            "those",
            "one",
            "oneself",
            "what",
            "whoever",
            "there",
            "here",
        )
    },
}
_MASC = {
    "mr",
    "mr.",
    "sir",
    "lord",
    "king",
    "father",
    "brother",
    "son",
    "uncle",
    "man",
    "gentleman",
    "boy",
    "husband",
    "prince",
    "master",
    "monsieur",
    "duke",
    "count",
    "baron",
    "fellow",
    "papa",
    "gentlemen",
    "men",
}
_FEM = {
    "mrs",
    "mrs.",
    "miss",
    "ms",
    "ms.",
    "lady",
    "madam",
    "madame",
    "queen",
    "mother",
    "sister",
    "daughter",
    "aunt",
    "woman",
    "girl",
    "wife",
    "princess",
    "mistress",
    "duchess",
    "mamma",
    "mama",
    "ladies",
    "women",
}
_STOP = {
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "of",
    "and",
    "'s",
    "’s",
    ",",
    ".",
    "my",
    "his",
    "her",
    "their",
    "our",
    "your",
    "its",
    "some",
    "any",
    "all",
    "to",
    "in",
    "on",
    "at",
    "for",
    "with",
    "by",
    "as",
    "or",
    "who",
    "which",
    "whom",
    "whose",
    "is",
    "was",
    "be",
    "‘",
    "’",
    "“",
    "”",
    '"',
    "'",
    "-",
    "--",
    ";",
    ":",
}
_HEAD_STOP = {
    "of",
    "who",
    "which",
    "that",
    "whom",
    "whose",
    "with",
    "in",
    "on",
    "at",
    "from",
    "to",
    ",",
    "--",
}
_OPEN_Q = {"“", '"', "``", "‘‘"}
_CLOSE_Q = {"”", "''", "’’"}
_MTYPES = {"PRON": 0, "NOM": 1, "PROP": 2}
_M_BUCKETS = np.array([1, 2, 3, 4, 5, 9, 17, 33, 65])  # mention distance >= edge
_S_BUCKETS = np.array([0, 1, 2, 3, 6])  # sentence distance >= edge


# 0/1 pair features after the match and mention-type ones, in column order (names and columns share it)
_FLAG_FEATURES = (
    "num_agree",
    "num_clash",
    "gen_agree",
    "gen_clash",
    "per_agree",
    "per_clash",
    "etype_same",
    "etype_diff",
    "nested",
    "relation",
    "same_quote",
    "i_quoted",
    "j_quoted",
)


def _buckets(x, edges):
    """One-hot bucket of ``x`` (``...``) for sorted lower ``edges``: (..., len(edges)) bool."""
    idx = np.searchsorted(edges, x, side="right") - 1
    return idx[..., None] == np.arange(len(edges))


def _base_names():
    names = ["exact", "content_match", "subset", "head_match", "overlap", "pron_same"]
    names += [f"type_{a}_{b}" for a in _MTYPES for b in _MTYPES]
    names += list(_FLAG_FEATURES)
    names += [f"mdist>={e}" for e in _M_BUCKETS] + [f"sdist>={e}" for e in _S_BUCKETS]
    return names


_CONJ = (
    [
        "exact",
        "content_match",
        "head_match",
        "overlap",
        "num_agree",
        "gen_agree",
        "gen_clash",
        "per_agree",
        "per_clash",
        "same_quote",
        "etype_same",
    ]
    + [f"sdist>={e}" for e in _S_BUCKETS]
    + [f"mdist>={e}" for e in _M_BUCKETS]
    + [f"jtype_{t}" for t in _MTYPES]
)
COREF_FEATURE_NAMES = tuple(_base_names() + [f"{t}*{c}" for t in _MTYPES for c in _CONJ])


# --------------------------------------------------------------------------------------------- attributes
def _mention_type(m, words_lower):
    if m.mention_type in _MTYPES:
        return _MTYPES[m.mention_type]
    if m.upos is not None:
        return 0 if m.upos == "PRON" else 2 if m.upos == "PROPN" else 1
    span = words_lower[m.start : m.end]
    return 0 if len(span) == 1 and span[0] in _PRON else 1


def _head_word(m, words_lower):
    if m.head_word is not None:
        return m.head_word.lower()
    span = words_lower[m.start : m.end]
    for k, w in enumerate(
        span
    ):  # head of "the father of the boy" is "father": last token before "of"/a clause
        if k > 0 and w in _HEAD_STOP:
            return span[k - 1]
    return span[-1]


def _attributes(doc):
    """Per-mention attribute arrays of a CorefDocument-like object (``mentions``, ``words``, ``extra``)."""
    words = [w.lower() for w in doc.words]
    ms = doc.mentions
    m = len(ms)
    texts = [" ".join(words[x.start : x.end]) for x in ms]
    mtype = np.array([_mention_type(x, words) for x in ms])
    heads = [_head_word(x, words) for x in ms]
    number, gender, person = np.zeros(m, int), np.zeros(m, int), np.full(m, 3)
    for k, x in enumerate(ms):
        if mtype[k] == 0 and (heads[k] in _PRON or texts[k] in _PRON):
            number[k], gender[k], person[k] = _PRON.get(texts[k], _PRON.get(heads[k]))
        elif mtype[k] == 0:
            person[k] = 0
        toks = set(words[x.start : x.end])
        if mtype[k] != 0:
            gender[k] = 1 if toks & _MASC else 2 if toks & _FEM else 0
        morph = dict(x.feats) if x.feats else {}
        number[k] = {"Sing": 1, "Plur": 2}.get(morph.get("Number"), number[k])
        gender[k] = {"Masc": 1, "Fem": 2, "Neut": 3}.get(morph.get("Gender"), gender[k])
        if "Person" in morph:
            person[k] = {"1": 1, "2": 2, "3": 3}.get(morph["Person"], person[k])
    _, text_id = np.unique(texts, return_inverse=True)
    _, head_id = np.unique(heads, return_inverse=True)
    etypes = [x.entity_type or "" for x in ms]
    _, etype_id = np.unique(etypes, return_inverse=True)
    etype_id = np.where(np.array([e == "" for e in etypes]), -1, etype_id)
    # content-word incidence (m, V): overlaps and subsets by one matrix product, not a loop over pairs
    content = [sorted(set(words[x.start : x.end]) - _STOP - set(_PRON)) for x in ms]
    vocab = {w: v for v, w in enumerate(sorted({w for c in content for w in c}))}
    inc = np.zeros((m, max(len(vocab), 1)), np.float32)
    for k, c in enumerate(content):
        inc[k, [vocab[w] for w in c]] = 1.0
    # quotation id per token: the index of the opening quote a token sits inside, -1 outside
    is_open = np.array([w in _OPEN_Q for w in doc.words])
    is_close = np.array([w in _CLOSE_Q for w in doc.words])
    pos = np.arange(len(is_open))
    # inside a quotation if the nearest quote mark at or before the token opens one (robust to unbalanced
    # marks)
    inside = np.maximum.accumulate(np.where(is_open, pos, -1)) > np.maximum.accumulate(
        np.where(is_close, pos, -1)
    )
    qid_tok = np.where(inside, np.cumsum(is_open), -1)
    starts = np.array([x.start for x in ms])
    ends = np.array([x.end for x in ms])
    # relation cue matrix (m, m): LitBank COP/APPOS, or UD appos between mention heads (GUM)
    rel = np.zeros((m, m), bool)
    for r in doc.extra.get("relations", ()) or ():
        _, a, b = r
        rel[a, b] = rel[b, a] = True
    deprels, tok_heads = doc.extra.get("deprels"), doc.extra.get("heads")
    if deprels is not None and tok_heads is not None:
        hk = np.array([x.head if x.head is not None else x.start for x in ms])
        app = np.array([deprels[h] in ("appos", "cop") or deprels[h].startswith("appos") for h in hk])
        gov = np.array([tok_heads[h] for h in hk])
        within = (gov[:, None] >= starts[None, :]) & (gov[:, None] < ends[None, :]) & app[:, None]
        rel |= within | within.T
    return dict(
        text_id=text_id,
        head_id=head_id,
        mtype=mtype,
        number=number,
        gender=gender,
        person=person,
        etype=etype_id,
        inc=inc,
        n_content=inc.sum(1),
        sent=np.array([x.sentence for x in ms]),
        start=starts,
        end=ends,
        qid=qid_tok[starts],
        rel=rel,
    )


def _coref_window(attr, n_ante):
    m = len(attr["mtype"])
    j, valid = antecedent_index(m, n_ante)
    i = np.broadcast_to(np.arange(m)[:, None], j.shape)

    def pair(name):
        x = attr[name]
        return x[:, None], x[j]

    ti, tj = pair("mtype")
    pron_i, pron_j = ti == 0, tj == 0
    nonpron = ~pron_i & ~pron_j
    exact = nonpron & (attr["text_id"][:, None] == attr["text_id"][j])
    overlap_m = attr["inc"] @ attr["inc"].T  # (m, m) shared content words
    ov = overlap_m[i, j]
    ni, nj = attr["n_content"][:, None], attr["n_content"][j]
    content_match = nonpron & (ov > 0) & (ov == ni) & (ov == nj)
    subset = nonpron & (ov > 0) & ((ov == ni) | (ov == nj)) & ~content_match
    head = nonpron & (attr["head_id"][:, None] == attr["head_id"][j])
    overlap = nonpron & (ov > 0)
    pron_same = pron_i & pron_j & (attr["text_id"][:, None] == attr["text_id"][j])
    types = (ti * 3 + tj)[..., None] == np.arange(9)
    feats = {}
    for name, key in (("num", "number"), ("gen", "gender"), ("per", "person")):
        a, b = pair(key)
        known = (a > 0) & (b > 0)
        feats[f"{name}_agree"], feats[f"{name}_clash"] = known & (a == b), known & (a != b)
    ei, ej = pair("etype")
    known = (ei >= 0) & (ej >= 0)
    nested = (attr["start"][j] <= attr["start"][:, None]) & (attr["end"][:, None] <= attr["end"][j]) | (
        attr["start"][:, None] <= attr["start"][j]
    ) & (attr["end"][j] <= attr["end"][:, None])
    qi, qj = pair("qid")
    mdist = _buckets(i - j, _M_BUCKETS)
    sdist = _buckets(attr["sent"][:, None] - attr["sent"][j], _S_BUCKETS)
    base = dict(
        exact=exact,
        content_match=content_match,
        subset=subset,
        head_match=head,
        overlap=overlap,
        pron_same=pron_same,
        **feats,
        etype_same=known & (ei == ej),
        etype_diff=known & (ei != ej),
        nested=nested,
        relation=attr["rel"][i, j],
        same_quote=(qi >= 0) & (qi == qj),
        i_quoted=np.broadcast_to(qi >= 0, j.shape),
        j_quoted=qj >= 0,
    )
    cols = [base[k] for k in ("exact", "content_match", "subset", "head_match", "overlap", "pron_same")]
    cols += [types[..., k] for k in range(9)]
    cols += [base[k] for k in _FLAG_FEATURES]
    cols += [mdist[..., k] for k in range(len(_M_BUCKETS))] + [sdist[..., k] for k in range(len(_S_BUCKETS))]
    conj = [base[c] for c in _CONJ[:11]] + [sdist[..., k] for k in range(len(_S_BUCKETS))]
    conj += [mdist[..., k] for k in range(len(_M_BUCKETS))] + [tj == t for t in range(3)]
    for t in range(3):
        cols += [(ti == t) & c for c in conj]
    out = np.stack(np.broadcast_arrays(*cols), -1).astype(np.uint8)
    out[~valid] = 0
    return out


_CACHE: dict = {}


def clear_cache():
    """Forget the in-memory feature cache."""
    _CACHE.clear()


def coref_features(doc, max_antecedents: int | None = None, cache_dir: str | os.PathLike | None = None):
    """Mention-pair features of a coreference document (gold mentions, in document order).

    Parameters
    ----------
    doc : jaxclust.datasets CorefDocument (``mentions`` with start/end/sentence and optional mention_type,
        entity_type, head_word, upos, feats; ``words``; ``extra`` with optional relations / deprels / heads)
    max_antecedents : int, optional
        Candidate window ``A`` (default: all earlier mentions).
    cache_dir : path, optional
        Also cache the features as ``.npy`` files there (keyed by document id, size and window).

    Returns
    -------
    ndarray (m, A, F) uint8, ``F = len(COREF_FEATURE_NAMES)``
    """
    m = len(doc.mentions)
    n_ante = max(m - 1, 1) if max_antecedents is None else max(min(m - 1, int(max_antecedents)), 1)
    key = (doc.doc_id, m, n_ante, len(COREF_FEATURE_NAMES))
    if key in _CACHE:
        return _CACHE[key]
    path = None
    if cache_dir is not None:
        tag = hashlib.sha1(repr(key).encode()).hexdigest()[:16]
        path = Path(cache_dir) / f"l3m_coref_{tag}.npy"
        if path.exists():
            _CACHE[key] = np.load(path)
            return _CACHE[key]
    feats = _coref_window(_attributes(doc), n_ante)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, feats)
    _CACHE[key] = feats
    return feats


# --------------------------------------------------------------------------------------------- posts
_GAP_BUCKETS = np.array([1, 2, 4, 8, 16, 32, 64])
POST_FEATURE_NAMES = tuple(
    ["tfidf_cos", "cos>0.1", "cos>0.3", "cos>0.5", "shared_rare", "shared_rare>0", "log_time_gap"]
    + [f"gap>={e}" for e in _GAP_BUCKETS]
    + [f"cos*gap>={e}" for e in _GAP_BUCKETS]
)


def post_features(
    texts, times=None, max_antecedents: int | None = None, vectorizer=None, rare_df: float = 0.01
):
    """Pair features of a stream of posts: tf-idf cosine, shared rare words, time or position gap.

    Parameters
    ----------
    texts : list of str, in arrival order
    times : array (m,) of float seconds, optional (log time gap feature; zero if absent)
    max_antecedents : int, optional
    vectorizer : fitted sklearn TfidfVectorizer, optional (default: fitted on ``texts``)
    rare_df : float
        A word is rare if its document frequency (read off the vectorizer's smoothed idf) is at most
        ``max(2, rare_df * n)`` posts.

    Returns
    -------
    ndarray (m, A, F) float32, ``F = len(POST_FEATURE_NAMES)``
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    m = len(texts)
    n_ante = max(m - 1, 1) if max_antecedents is None else max(min(m - 1, int(max_antecedents)), 1)
    if vectorizer is None:
        vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=1).fit(texts)
    x = vectorizer.transform(texts)
    cos = np.asarray((x @ x.T).todense(), np.float32)  # rows are L2-normalised
    # rare words: idf above the value of a word seen in a fraction rare_df of the fitted documents
    n_fit = getattr(vectorizer, "_n_fit", None) or max(m, 1)
    df_max = max(2.0, rare_df * n_fit)  # a word in at most 2 posts is always rare
    idf_cut = np.log((1 + n_fit) / (1 + df_max)) + 1 - 1e-9
    rare = (x > 0).astype(np.float32).multiply(vectorizer.idf_[None, :] >= idf_cut).tocsr()
    shared = np.asarray((rare @ rare.T).todense(), np.float32)
    j, valid = antecedent_index(m, n_ante)
    i = np.broadcast_to(np.arange(m)[:, None], j.shape)
    c = cos[i, j]
    s = shared[i, j]
    t = np.zeros(m) if times is None else np.asarray(times, float)
    gap_t = np.log1p(np.maximum(t[:, None] - t[j], 0.0)) / 10.0
    gap = _buckets(i - j, _GAP_BUCKETS)
    cols = [c, c > 0.1, c > 0.3, c > 0.5, np.log1p(s), s > 0, gap_t]
    cols += [gap[..., k] for k in range(len(_GAP_BUCKETS))] + [
        c * gap[..., k] for k in range(len(_GAP_BUCKETS))
    ]
    out = np.stack(np.broadcast_arrays(*cols), -1).astype(np.float32)
    out[~valid] = 0
    return out
