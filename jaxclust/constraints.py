"""Must-link / cannot-link constraint sets, closed under what they imply, in the form the JAX samplers consume.

Must-links are closed by union-find into *groups* (connected components); a group is the unit a constrained
sampler moves as one block. Cannot-links are lifted to the group level: group ``U`` may not share a component with
any of its cannot-link partner groups. The padded partner table ``cannot_partners()`` of shape ``(G, capacity)``
(``-1`` padding) becomes a mask over component slots inside a jitted sweep; :meth:`Constraints.partner_rows`
keeps the width fixed and continues the lists of the few groups with more partners in spill rows.

Answers that may be wrong (soft constraints, Vlachos et al. 2010's suggested extension). An answer on ``(i, j)``
with error rate ``0 < eps <= 1/2`` is an observation: ``p(must | z_i = z_j) = 1 - eps``,
``p(must | z_i != z_j) = eps`` (cannot: the reverse). It neither joins groups nor forbids anything; the posterior
gains the factor ``prod_answers p(a | z)``. Lifted to groups ``g != h``, the answers on a pair add up to one
log-weight ``w_gh = sum_a s_a ln((1 - eps_a) / eps_a)`` (``s = +1`` for must, ``-1`` for cannot), so that
``ln p(A | z) = const + sum_{g < h} w_gh 1[z_g = z_h]`` (``const`` = :attr:`Constraints.log_answer_constant`).
:meth:`Constraints.partner_table` carries these weights in the same padded table as the cannot-links (which weigh
``-inf``): with ``eps = 0`` an answer is a hard constraint.

Example
-------
>>> c = Constraints(5, must_link=[(0, 1), (1, 2)], cannot_link=[(2, 3)])
>>> c.status(0, 3)
'cannot'
>>> c.group_of.tolist()
[0, 0, 0, 1, 2]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from jaxclust.answers import KINDS, SoftAnswers, as_kind, check_error_rate, lift_answers
from jaxclust.constraint_queries import GroupQueries
from jaxclust.errors import ConstraintError, InvalidInputError
from jaxclust.must_link_closure import close
from jaxclust.pairs import Pair, as_index, as_pair, pair_list, read_dict, show
from jaxclust.partner_tables import PartnerTables
from jaxclust.validation import check_labels

__all__ = ["Constraints", "as_constraints"]


class Constraints(GroupQueries, PartnerTables, SoftAnswers):
    """An immutable set of must-link and cannot-link constraints over ``n`` items.

    This class builds a set (the constructors, ``with_*``, serialisation); what a built set answers comes from
    one class per concern: its groups and pair queries (:class:`~jaxclust.constraint_queries.GroupQueries`),
    the partner tables samplers read (:class:`~jaxclust.partner_tables.PartnerTables`) and its soft answers
    (:class:`~jaxclust.answers.SoftAnswers`).

    Parameters
    ----------
    n : int
        Number of items; indices run over ``0..n-1``.
    must_link, cannot_link : iterable of (i, j)
        Pairs of item indices. Order matters only for ``on_conflict="drop"`` (must-links are added first, then
        cannot-links, each in the given order; use :meth:`from_pairs` for an interleaved order).
    on_conflict : {"raise", "drop"}
        ``"raise"`` (default): a set in which must-links join a cannot-linked pair raises
        :class:`~jaxclust.errors.ConstraintConflictError` naming the pair and the must-link chain.
        ``"drop"``: keep the earliest constraints and drop each later one that contradicts them (for noisy human
        answers); what was dropped is in :attr:`dropped`.

    error_rate : float
        0 (default): the pairs are hard constraints. In ``(0, 1/2]``: every pair given here is an answer that
        is wrong with this probability (see the module docstring); use :meth:`from_answers` or
        :meth:`with_answer` for a rate per answer.

    Notes
    -----
    Malformed input (an index out of range, a non-integer index, a self cannot-link) always raises
    :class:`~jaxclust.errors.ConstraintError`. Exact duplicates of hard constraints are kept once; every soft
    answer is kept (repeated or conflicting answers are evidence).
    """

    __slots__ = (
        "_n",
        "_log",
        "_dropped",
        "_on_conflict",
        "_group_of",
        "_cl_group_keys",
        "_cl_groups",
        "_cl_items",
        "_groups",
        "_soft",
        "_soft_groups",
        "_soft_weights",
        "_soft_const",
    )

    def __init__(
        self,
        n: int,
        must_link: Iterable[Pair] = (),
        cannot_link: Iterable[Pair] = (),
        on_conflict: Literal["raise", "drop"] = "raise",
        error_rate: float = 0.0,
    ):
        log = [(p, True) for p in pair_list(must_link, "must_link")]
        log += [(p, False) for p in pair_list(cannot_link, "cannot_link")]
        eps = check_error_rate(error_rate, "error_rate")
        # with an error rate, every pair is an answer that may be wrong: none is a hard constraint
        hard, soft = ([], [(p, must, eps) for p, must in log]) if eps > 0 else (log, [])
        self._init(n, hard, on_conflict, dropped=(), soft=soft)

    # construction -------------------------------------------------------------------------------------------
    def _init(
        self,
        n: Any,
        log: Sequence[tuple[Any, bool]],
        on_conflict: str,
        dropped: Sequence,
        soft: Sequence = (),
    ) -> None:
        if on_conflict not in ("raise", "drop"):
            raise InvalidInputError(f"on_conflict: expected 'raise' or 'drop', got {on_conflict!r}")
        self._log, self._dropped, roots = close(n, log, on_conflict, dropped)
        self._n, self._on_conflict = int(n), on_conflict
        self._set_groups(roots)
        self._set_cannot(np.array([p for p, must in self._log if not must], dtype=np.int64).reshape(-1, 2))
        self._init_soft(soft)

    def _set_groups(self, roots: np.ndarray) -> None:
        """Groups numbered 0..G-1 in order of their first member, from any labelling ``roots`` of them."""
        _, first, inverse = np.unique(roots, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        self._group_of = rank[inverse].astype(np.int32)
        self._group_of.setflags(write=False)
        self._groups = None

    def _set_cannot(self, cl: np.ndarray) -> None:
        """The kept cannot-links ``cl`` (m, 2) and their group-level edges under the current groups."""
        cl.setflags(write=False)
        self._cl_items = cl
        g = self._group_of[cl] if len(cl) else np.zeros((0, 2), np.int32)
        g = np.unique(np.sort(g, axis=1), axis=0).astype(np.int32) if len(g) else g.astype(np.int32)
        g.setflags(write=False)
        self._cl_groups = g
        self._cl_group_keys = np.sort(g[:, 0].astype(np.int64) * self._n + g[:, 1])

    def _init_soft(self, soft: Sequence) -> None:
        """Validate the soft answers and lift them to group-pair log-weights (see the module docstring)."""
        self._soft, self._soft_const, self._soft_groups, self._soft_weights = lift_answers(
            soft, self._n, self._group_of, self._is_cannot_group
        )

    def _is_cannot_group(self, g: int, h: int) -> bool:
        key = min(g, h) * self._n + max(g, h)
        pos = np.searchsorted(self._cl_group_keys, key)
        return bool(pos < len(self._cl_group_keys) and self._cl_group_keys[pos] == key)

    @classmethod
    def from_pairs(
        cls,
        n: int,
        constraints: Iterable[tuple[int, int, Any]],
        on_conflict: Literal["raise", "drop"] = "raise",
    ) -> Constraints:
        """Build from an ordered sequence of ``(i, j, kind)`` with kind ``"must"``/``"cannot"`` (or True/False)."""
        log = []
        for item in constraints:
            try:
                i, j, kind = item
            except (TypeError, ValueError) as exc:
                raise ConstraintError(f"constraint {item!r}: expected (i, j, 'must' | 'cannot')") from exc
            log.append(((i, j), as_kind(kind, f"constraint {show(item)}")))
        obj = cls.__new__(cls)
        obj._init(n, log, on_conflict, dropped=())
        return obj

    @classmethod
    def from_labels(cls, labels: Any, indices: Iterable[int], n: int | None = None) -> Constraints:
        """All pairs among the labelled ``indices``: must-link when ``labels[i] == labels[j]``, else cannot-link.

        ``labels`` has one entry per item (only the entries at ``indices`` are read); ``n`` defaults to its length.
        """
        labels = check_labels(labels, name="labels")
        n = len(labels) if n is None else n
        idx = np.asarray(list(indices), dtype=np.int64) if not isinstance(indices, np.ndarray) else indices
        for v in np.asarray(idx).ravel():
            as_index(v, min(n, len(labels)), "from_labels")
        idx = np.unique(np.asarray(idx, dtype=np.int64))
        a, b = np.triu_indices(len(idx), k=1)
        ia, ib = idx[a], idx[b]
        same = labels[ia] == labels[ib]
        return cls(
            n,
            must_link=zip(ia[same].tolist(), ib[same].tolist(), strict=True),
            cannot_link=zip(ia[~same].tolist(), ib[~same].tolist(), strict=True),
        )

    @classmethod
    def from_answers(
        cls,
        n: int,
        answers: Iterable[tuple],
        on_conflict: Literal["raise", "drop"] = "raise",
        error_rate: float = 0.0,
    ) -> Constraints:
        """From answers ``(i, j, kind)`` or ``(i, j, kind, error_rate)`` in order (kind ``"must"``/``"cannot"``).

        An answer's error rate (default ``error_rate``) of 0 makes it a hard constraint; in ``(0, 1/2]`` a soft
        one (see the module docstring). Hard answers that contradict each other follow ``on_conflict``; soft
        ones are all kept.
        """
        hard, soft = [], []
        for item in answers:
            if isinstance(item, str | bytes) or not isinstance(item, Sequence) or len(item) not in (3, 4):
                raise ConstraintError(f"answer {item!r}: expected (i, j, 'must' | 'cannot'[, error_rate])")
            i, j, kind = item[:3]
            must = as_kind(kind, f"answer {show(item)}")
            eps = check_error_rate(item[3] if len(item) == 4 else error_rate, f"answer {item!r} error_rate")
            (soft if eps > 0 else hard).append(((i, j), must, eps))
        obj = cls.__new__(cls)
        obj._init(n, [(p, m) for p, m, _ in hard], on_conflict, dropped=(), soft=soft)
        return obj

    def _with(self, i: int, j: int, must: bool, error_rate: float = 0.0) -> Constraints:
        """This set with one answer more: the same object as building the whole sequence again, in time
        linear in ``n`` and the cannot-links (the union of two groups, the cannot-link edges relabelled)
        rather than in every constraint so far."""
        eps = check_error_rate(error_rate, "error_rate")
        obj = Constraints.__new__(Constraints)
        for name in self.__slots__:
            setattr(obj, name, getattr(self, name))
        if eps > 0:
            obj._init_soft(list(self._soft) + [((i, j), must, eps)])
            return obj
        kind = KINDS[must]
        a, b = as_pair((i, j), self._n, kind)
        if a == b:  # the full build names the pair
            obj._init(self._n, [*self._log, ((i, j), must)], self._on_conflict, self._dropped, self._soft)
            return obj
        if ((a, b), must) in self._log or ((b, a), must) in self._log:
            return obj  # a duplicate of a kept constraint: skipped
        ga, gb = int(self._group_of[a]), int(self._group_of[b])
        if (must and ga != gb and self._is_cannot_group(ga, gb)) or (not must and ga == gb):
            if self._on_conflict == "raise" or a == b:  # the full build raises with the must-link chain
                obj._init(self._n, [*self._log, ((i, j), must)], self._on_conflict, self._dropped, self._soft)
                return obj
            obj._dropped = (*self._dropped, ((a, b), kind))
            return obj
        obj._log = (*self._log, ((a, b), must))
        if must and ga == gb:
            return obj  # a must-link inside a group: kept, nothing else changes
        if must:
            g = self._group_of
            obj._set_groups(np.where(g == gb, ga, g))
            obj._set_cannot(self._cl_items)
        else:
            obj._set_cannot(np.concatenate([self._cl_items, np.array([[a, b]], dtype=np.int64)]))
        if self._soft:
            obj._init_soft(self._soft)  # lifted to the new groups
        return obj

    def with_answer(self, i: int, j: int, must: bool | str, error_rate: float = 0.0) -> Constraints:
        """A new set with the answer "(i, j) must (or cannot) link" added (``must``: True / ``"must"`` or
        False / ``"cannot"``; a "don't know" is no answer), wrong with probability ``error_rate`` (0: a hard
        constraint)."""
        return self._with(i, j, as_kind(must, f"answer ({i!r}, {j!r})"), error_rate)

    def with_must_link(self, i: int, j: int) -> Constraints:
        """A new set with the must-link ``(i, j)`` added."""
        return self._with(i, j, True)

    def with_cannot_link(self, i: int, j: int) -> Constraints:
        """A new set with the cannot-link ``(i, j)`` added."""
        return self._with(i, j, False)

    def with_constraint(self, i: int, j: int, must: bool | str) -> Constraints:
        """A new set with ``(i, j)`` added as a must-link (``must=True`` or ``"must"``) or cannot-link
        (``False`` or ``"cannot"``)."""
        return self._with(i, j, as_kind(must, f"constraint ({i!r}, {j!r})"))

    # read-only views ------------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self._n

    @property
    def on_conflict(self) -> str:
        return self._on_conflict

    @property
    def must_link(self) -> tuple[Pair, ...]:
        """Must-link pairs kept, in insertion order."""
        return tuple(p for p, must in self._log if must)

    @property
    def cannot_link(self) -> tuple[Pair, ...]:
        """Cannot-link pairs kept, in insertion order."""
        return tuple(p for p, must in self._log if not must)

    @property
    def pairs(self) -> tuple[tuple[int, int, str], ...]:
        """Every kept constraint as ``(i, j, "must" | "cannot")`` in insertion order."""
        return tuple((i, j, KINDS[must]) for (i, j), must in self._log)

    @property
    def dropped(self) -> tuple[tuple[Pair, str], ...]:
        """Constraints dropped because they contradicted earlier ones (``on_conflict="drop"``): ``((i, j), kind)``."""
        return self._dropped

    def __len__(self) -> int:
        return len(self._log) + len(self._soft)

    # serialisation --------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "n": self._n,
            "on_conflict": self._on_conflict,
            "constraints": [[i, j, k] for i, j, k in self.pairs],
            "dropped": [[i, j, k] for (i, j), k in self._dropped],
            "answers": [[i, j, k, eps] for i, j, k, eps in self.answers],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> Constraints:
        """Inverse of :meth:`to_dict`; a malformed dict raises ``ConstraintError`` naming the bad entry."""
        n, on_conflict, entries, dropped, soft = read_dict(d)
        obj = cls.from_pairs(n, entries, on_conflict)
        obj._dropped = tuple(
            ((as_index(i, obj.n, "dropped"), as_index(j, obj.n, "dropped")), k) for i, j, k in dropped
        )
        if soft:
            obj._init_soft(soft)
        return obj

    @classmethod
    def from_json(cls, s: str) -> Constraints:
        """Inverse of :meth:`to_json`; text that is not JSON raises ``ConstraintError``."""
        try:
            d = json.loads(s)
        except (TypeError, ValueError) as exc:
            raise ConstraintError(f"from_json: not valid JSON ({exc})") from exc
        return cls.from_dict(d)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Constraints)
            and self._n == other._n
            and self._log == other._log
            and self._soft == other._soft
        )

    def __hash__(self) -> int:
        return hash((self._n, self._log, self._soft))

    def __repr__(self) -> str:
        ml, cl = len(self.must_link), len(self.cannot_link)
        soft = f", answers={len(self._soft)}" if self._soft else ""
        return f"Constraints(n={self._n}, must_link={ml}, cannot_link={cl}{soft}, groups={self.n_groups})"


def as_constraints(
    constraints: Any, n: int, where: str = "fit", subject: str = "X has {n} rows", soft: bool = True
) -> Constraints | None:
    """The one way every constrained estimator reads its ``constraints`` argument.

    Accepts ``None``, a :class:`Constraints`, a mapping ``{"must_link": pairs, "cannot_link": pairs}`` or a
    pair ``(must_link, cannot_link)`` of pair lists, and returns a :class:`Constraints` over ``n`` items (or
    ``None``). Anything else raises :class:`~jaxclust.errors.ConstraintError` naming ``where`` (e.g.
    ``"COPKMeans.fit"``; ``subject`` describes the ``n`` items in the size-mismatch message; ``soft=False``
    for an estimator that cannot weigh answers with an error rate, which then raise): in particular an array,
    which is what lands here when a caller passes labels positionally as ``fit(X, y)`` (constrained estimators
    take ``fit(X, constraints)``; labels become constraints through :meth:`Constraints.from_labels`).
    """
    if constraints is None:
        return None
    if isinstance(constraints, Constraints):
        c = constraints
    elif isinstance(constraints, Mapping):
        unknown = sorted(str(k) for k in set(constraints) - {"must_link", "cannot_link"})
        if unknown:
            raise ConstraintError(
                f"constraints: unknown keys {unknown} given to {where} (use 'must_link', 'cannot_link')"
            )
        c = (constraints.get("must_link", ()), constraints.get("cannot_link", ()))
    elif isinstance(constraints, tuple | list) and len(constraints) == 2 and not np.isscalar(constraints[0]):
        c = tuple(constraints)
    elif (
        isinstance(constraints, np.ndarray)
        or hasattr(constraints, "__array__")
        or (isinstance(constraints, tuple | list) and all(np.isscalar(v) for v in constraints))
    ):
        raise ConstraintError(
            f"constraints: {where} got an array of shape {np.shape(constraints)} where it takes constraints "
            "(the second argument of a constrained estimator's fit is constraints, not labels y); to use "
            "labels, pass Constraints.from_labels(y, labelled_indices)"
        )
    else:
        raise ConstraintError(
            f"constraints: {where} expected a jaxclust.Constraints, a dict with 'must_link'/'cannot_link' or "
            f"a pair (must_link, cannot_link), got {type(constraints).__name__}"
        )
    if not isinstance(c, Constraints):
        c = Constraints(n, must_link=c[0], cannot_link=c[1])
    if c.n != n:
        raise ConstraintError(f"constraints: built for {c.n} items but {subject.format(n=n)} ({where})")
    if not soft and c.answers:
        i, j, kind, eps = c.answers[0]
        raise ConstraintError(
            f"constraints: {where} takes hard constraints only, and {len(c.answers)} answer(s) with an error "
            f"rate were given (the first: {kind} ({i}, {j}) with error_rate={eps}); give them as hard "
            "constraints (error_rate=0) or use an estimator that weighs answers (DPMM, ActiveLearner)"
        )
    return c
