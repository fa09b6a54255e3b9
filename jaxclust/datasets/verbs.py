"""Verb clustering gold standards: subcategorization-frame (SCF) distributions with verb-class labels.

- General English: VerbNet 3.3 classes x VALEX SCF distributions (folder ``verbs_general_verbnet33_valex``).
- Biomedical: BioVerbNet's three-level classes x BioCat SCF distributions (folder
``verbs_biomed_bioverbnet_biocat``).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from jaxclust.datasets.base import (
    Dataset,
    check_choice,
    dataset_folder,
    encode_labels,
    file_errors,
    read_csv_rows,
)
from jaxclust.errors import InvalidInputError

__all__ = ["load_verbs_general", "load_verbs_biomed"]

GENERAL_FOLDER = "verbs_general_verbnet33_valex"
_GENERAL_FILES = {
    "relfreq": "derived/vn_valex_raw_relfreq.csv",
    "counts": "derived/vn_valex_raw_counts.csv",
    "balanced": "derived/vn_valex_balanced_46x12_relfreq.csv",
}
_GENERAL_LABELS = {"root_class": "vn_root_class", "root_number": "root_number", "levin_top": "levin_top"}

BIOMED_FOLDER = "verbs_biomed_bioverbnet_biocat"
_BIOMED_FILES = {
    "relfreq": "derived/bioverb_scf_relfreq_filter.csv",
    "scfspecific": "derived/bioverb_scf_scfspecific_filter.csv",
}
# level name -> CSV column; levels 1/2/3 = coarse to fine, as in Korhonen et al. (2006)
_BIOMED_LEVELS = {"top": "class_top", "mid": "class_mid", "fine": "class_fine"}
_BIOMED_LEVEL_ALIASES = {
    1: "top",
    2: "mid",
    3: "fine",
    "class_top": "top",
    "class_mid": "mid",
    "class_fine": "fine",
}


@functools.lru_cache(maxsize=16)
def _read_wide_csv(path: str, prefix: str) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]], np.ndarray]:
    """Parse a wide CSV: (feature names minus ``prefix``, other columns by name, read-only matrix)."""
    table = read_csv_rows(path, header=False)
    if not table:
        raise InvalidInputError(f"{path}: empty file (expected a header row)")
    header, rows = table[0], table[1:]
    feat_cols = [i for i, h in enumerate(header) if h.startswith(prefix)]
    meta_cols = [i for i, h in enumerate(header) if not h.startswith(prefix)]
    with file_errors(path):
        X = np.array([[float(r[i]) for i in feat_cols] for r in rows], dtype=np.float64).reshape(
            len(rows), len(feat_cols)
        )
    X.flags.writeable = False
    meta = {header[i]: tuple(r[i] for r in rows) for i in meta_cols}
    return tuple(header[i][len(prefix) :] for i in feat_cols), meta, X


def _number_key(s: str) -> tuple:
    """Sort key for dotted class numbers (``"9.10" > "9.2"``) that also orders names like ``put-9.1``."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in s.replace("-", ".").split("."))


def _labelings(meta: dict[str, tuple[str, ...]], columns: dict[str, str], rows: np.ndarray):
    labels, names = {}, {}
    for key, col in columns.items():
        values = [meta[col][i] for i in rows]
        order = sorted(set(values), key=_number_key)
        labels[key], names[key] = encode_labels(values, order)
    return labels, names


def load_verbs_general(
    subset: str = "balanced",
    label: str = "root_class",
    features: str = "relfreq",
    data_dir: str | os.PathLike | None = None,
) -> Dataset:
    """English verbs: VALEX SCF distributions with VerbNet 3.3 classes.

    Parameters
    ----------
    subset : {"balanced", "full"}
        ``"balanced"``: 552 verbs, 46 root classes x 12 verbs (Sun et al. 2008 design, not their list);
        ``"full"``: 2,582 verbs, 275 root classes.
    label : {"root_class", "root_number", "levin_top"}
        Target labeling: VerbNet root class (``put-9.1``), its number (``9.1``; same partition), or the top
        Levin/VerbNet number (``9``; 93 classes in full, 24 in balanced). All three are in ``labels``.
    features : {"relfreq", "counts"}
        Unfiltered VALEX relative frequencies (rows sum to 1) or raw frame counts; 36 ANLT frame types.
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    Dataset
        ``X`` (n, 36) float64, ``item_names`` = verbs, ``extra["total_count"]`` (n,) VALEX frame tokens.
    """
    check_choice(subset, "subset", ("balanced", "full"))
    label = "root_class" if label == "vn_root_class" else label  # the CSV column name works too
    check_choice(label, "label", tuple(_GENERAL_LABELS))
    check_choice(features, "features", ("relfreq", "counts"))
    files = [_GENERAL_FILES["balanced" if subset == "balanced" else "relfreq"]]
    if features == "counts":
        files.append(_GENERAL_FILES["counts"])
    folder = dataset_folder(GENERAL_FOLDER, files, data_dir)
    fnames, meta, X = _read_wide_csv(str(folder / files[0]), "rf:")
    verbs = list(meta["verb"])
    total = np.array([float(t) for t in meta["total_count"]])
    if features == "counts":
        cnames, cmeta, C = _read_wide_csv(str(folder / files[1]), "n:")
        if cnames != fnames:
            raise ValueError(f"{files[1]} and {files[0]} disagree on the frame columns")
        row = {v: i for i, v in enumerate(cmeta["verb"])}
        X = C[[row[v] for v in verbs]]
    labels, names = _labelings(meta, _GENERAL_LABELS, np.arange(len(verbs)))
    return Dataset(
        name=f"verbs_general/{subset}",
        X=np.array(X, dtype=np.float64),
        texts=None,
        labels=labels,
        label_names=names,
        item_names=verbs,
        feature_names=list(fnames),
        target=label,
        description=(
            "English verbs x VALEX subcategorization-frame distributions (36 ANLT frame types), gold "
            "classes from VerbNet 3.3 (a verb kept if single-word, in exactly one root class, and in VALEX)."
            + (
                " Balanced subset: 46 root classes x the 12 verbs of highest VALEX frequency (>= 100)."
                if subset == "balanced"
                else ""
            )
        ),
        source=(
            "VerbNet 3.3 (nltk_data verbnet3, Kipper-Schuler); VALEX SCF lexicon (Korhonen, Krymolowski & "
            "Briscoe 2006) via TalLinzen/lexvars data/subcat/lex-lrec-raw_anlt.csv"
        ),
        license=(
            "VerbNet 3.x license (BSD/WordNet-like, keep the notice); VALEX provided freely for "
            "research use. Research use only; not redistributed with jaxclust."
        ),
        extra={"total_count": total},
    )


def _biomed_level(level) -> str:
    level = _BIOMED_LEVEL_ALIASES.get(level, level)
    return check_choice(level, "level", tuple(_BIOMED_LEVELS))


def load_verbs_biomed(
    level: int | str = 1, features: str = "relfreq", data_dir: str | os.PathLike | None = None
) -> Dataset:
    """Biomedical verbs: BioCat SCF distributions with BioVerbNet classes at three levels.

    Parameters
    ----------
    level : {1, 2, 3} or {"top", "mid", "fine"}
        Target labeling: 1/"top" = 22 classes, 2/"mid" = 71, 3/"fine" = 112 (coarse to fine). All three are in
        ``labels`` under ``"top"``, ``"mid"``, ``"fine"``.
    features : {"relfreq", "scfspecific"}
        BioCat lexicon filtered with a 0.03 relative-frequency cut-off (136 frames) or with the SCF-specific
        method (149 frames); rows are relative frequencies.
    data_dir : path, optional
        Data root (default ``$JAXCLUST_DATA``).

    Returns
    -------
    Dataset
        593 verbs; ``X`` (593, 136 or 149) float64; ``extra["total_count"]`` (n,) frame counts.
    """
    target = _biomed_level(level)
    check_choice(features, "features", tuple(_BIOMED_FILES))
    folder = dataset_folder(BIOMED_FOLDER, [_BIOMED_FILES[features]], data_dir)
    fnames, meta, X = _read_wide_csv(str(folder / _BIOMED_FILES[features]), "rf:")
    verbs = list(meta["verb"])
    labels, names = _labelings(meta, _BIOMED_LEVELS, np.arange(len(verbs)))
    return Dataset(
        name=f"verbs_biomed/{features}",
        X=np.array(X, dtype=np.float64),
        texts=None,
        labels=labels,
        label_names=names,
        item_names=verbs,
        feature_names=list(fnames),
        target=target,
        description=(
            "Biomedical verbs (BioVerbNet verbs with a single class and present in BioCat) x BioCat SCF "
            "relative frequencies (RASP frame inventory); gold BioVerbNet classes at three levels "
            "(top 22 / mid 71 / fine 112)."
        ),
        source=(
            "BioVerbNet (cambridgeltl/bioverbnet, Majewska et al. 2021); BioCat SCF lexicon "
            "(Lippincott et al. 2013) via cambridgeltl/subcategorization-frames-and-learner-English-data"
        ),
        license=(
            "BioVerbNet: MIT. BioCat lexicon: no licence stated, research/evaluation use only; not "
            "redistributed with jaxclust."
        ),
        extra={"total_count": np.array([float(t) for t in meta["total_count"]])},
    )
