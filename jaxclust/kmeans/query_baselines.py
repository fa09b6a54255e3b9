"""Classic active pair-query strategies for constrained clustering, as baselines for :mod:`jaxclust.active`.

* :class:`ExploreConsolidate` (Basu, Banerjee & Mooney, SDM 2004). *Explore*: a farthest-first traversal; each
new
  point is asked against one member of each neighbourhood found so far until a must-link is found, otherwise
  it
  opens a new neighbourhood, until ``n_clusters`` neighbourhoods exist. *Consolidate*: random points outside
  the
  neighbourhoods are asked against the neighbourhoods, nearest centroid first, until a must-link.
* :class:`MinMax` (Mallapragada, Jin & Jain, ICPR 2008). The same two phases, but consolidation picks the
point whose
  largest similarity to the skeleton (all neighbourhood points) is smallest and asks the neighbourhoods by
  decreasing similarity. With the Gaussian similarity exp(-‖x - y‖² / 2σ²), a decreasing function of distance,
  "min over points of max similarity" is "max over points of min distance" whatever σ, so the choice is an
  incremental farthest-first update (O(n·d) per step, no n×n matrix, no kernel width needed).
* :class:`NPU` (Xiong, Azimi & Fern, IEEE TKDE 2014, "normalised point-based uncertainty"). Each step clusters
the data
  with the constraints so far (PCKMeans by default), learns a random forest on the cluster labels, estimates
  p(x ∈ N_l) ∝ mean random-forest similarity (fraction of trees sharing a leaf) of x to the members of N_l,
  and picks the point maximising H(p) / E[#queries], where the neighbourhoods are asked in order of decreasing
  probability so E[#queries] = Σ_r r · p_(r) with p sorted in **descending** order (a public implementation
  leaves it unsorted). Neighbourhood similarities are accumulated per tree and per leaf (O(T·n)), not through
  an n×n similarity matrix.

Oracle. Any object with ``answer(i, j)`` or ``query(i, j)``, or a callable ``oracle(i, j)``, returning
``"must"`` /
``"cannot"`` / ``"unknown"`` or ``True`` / ``False`` / ``None`` (the :mod:`jaxclust.active.oracles`
interface).
A pair whose status is already implied by earlier answers (including transitivity) is never asked: its status
is
read from the constraints for free. A pair answered "unknown" is never asked again. ``max_queries`` counts
oracle
calls only.

Every strategy records its questions in order in ``queries_`` (``(i, j, answer)``), so the constraint set
after any smaller budget b is :func:`constraints_from_queries` of the first b entries: one run gives a whole
learning curve.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from jaxclust.answers import ask
from jaxclust.constraints import Constraints, as_constraints
from jaxclust.errors import InvalidInputError
from jaxclust.kmeans.constrained import PCKMeans
from jaxclust.validation import (
    Int,
    check_array,
    check_int,
    looks_like_constraints,
    seed_from,
    sklearn_seed,
    validate_params,
)

__all__ = ["ExploreConsolidate", "MinMax", "NPU", "constraints_from_queries", "closure_constraints"]


def _check_oracle(oracle, where: str):
    """The oracle as given, after checking it can answer (``answer``/``query`` method or a callable)."""

    if looks_like_constraints(oracle):
        raise InvalidInputError(
            f"oracle: {where} got constraints where it takes the oracle; call fit(X, oracle, constraints)"
        )
    if not (callable(oracle) or hasattr(oracle, "answer") or hasattr(oracle, "query")):
        raise InvalidInputError(
            f"oracle: {where} expected a callable oracle(i, j) or an object with answer(i, j) / query(i, j), "
            f"got {type(oracle).__name__}"
        )
    return oracle


def _ask(oracle, i: int, j: int) -> str:
    if not hasattr(oracle, "answer") and not callable(oracle) and hasattr(oracle, "query"):
        return ask(oracle.query, i, j)
    return ask(oracle, i, j)


def constraints_from_queries(
    queries, n: int, budget: int | None = None, on_conflict: str = "drop"
) -> Constraints:
    """The constraints of the first ``budget`` answers of ``queries`` (all if None), unknowns skipped."""
    qs = list(queries)
    if budget is not None:
        qs = qs[: check_int(budget, "budget", minimum=0)]
    for q in qs:
        if isinstance(q, str | bytes) or not hasattr(q, "__len__") or len(q) != 3:
            raise InvalidInputError(f"queries: entry {q!r} is not (i, j, answer)")
        if q[2] not in ("must", "cannot", "unknown"):
            raise InvalidInputError(
                f"queries: entry {q!r} has answer {q[2]!r}, expected 'must', 'cannot' or 'unknown'"
            )
    return Constraints.from_pairs(
        n, [(i, j, a) for i, j, a in qs if a in ("must", "cannot")], on_conflict=on_conflict
    )


def closure_constraints(constraints: Constraints) -> Constraints:
    """All pairwise constraints implied (by transitivity) among the constrained items, as an explicit set.

    PCKMeans penalises only the pairs it is given; Basu et al. feed it this closure.
    """
    items = np.unique(np.asarray(constraints.must_link + constraints.cannot_link, dtype=np.int64).ravel())
    if len(items) < 2:
        return constraints
    a, b = np.triu_indices(len(items), k=1)
    ia, ib = items[a], items[b]
    codes = constraints.status_codes(ia, ib)
    return Constraints(
        constraints.n,
        must_link=zip(ia[codes == 1].tolist(), ib[codes == 1].tolist(), strict=True),
        cannot_link=zip(ia[codes == -1].tolist(), ib[codes == -1].tolist(), strict=True),
        on_conflict="drop",
    )


class _Session:
    """Asks the oracle, never about a known or already-asked pair; keeps the answers as constraints."""

    def __init__(self, n: int, oracle, max_queries: int, constraints: Constraints | None, progress: bool):
        self.oracle = oracle
        self.max_queries = max_queries
        self.c = constraints if constraints is not None else Constraints(n, on_conflict="drop")
        self.asked: set[tuple[int, int]] = set()
        self.queries: list[tuple[int, int, str]] = []
        self.bar = tqdm(total=max_queries, desc="queries", disable=not progress, leave=False)

    @property
    def exhausted(self) -> bool:
        return len(self.queries) >= self.max_queries

    def must(self, i: int, j: int) -> bool | None:
        """True / False / None (unknown or budget spent) for the pair, asking only when it is not known."""
        known = self.c.status(i, j)
        if known is not None:
            return known == "must"
        key = (min(i, j), max(i, j))
        if key in self.asked or self.exhausted:
            return None
        reply = _ask(self.oracle, int(i), int(j))
        self.asked.add(key)
        self.queries.append((int(i), int(j), reply))
        self.bar.update(1)
        if reply == "unknown":
            return None
        self.c = self.c.with_constraint(int(i), int(j), reply == "must")
        now = self.c.status(i, j)  # None when a noisy answer contradicting earlier ones was dropped
        return None if now is None else now == "must"

    def close(self):
        self.bar.close()


class _NeighbourhoodStrategy:
    """Shared fit: explore by farthest-first until ``n_clusters`` neighbourhoods, then consolidate."""

    _parameter_constraints = {"n_clusters": Int(1), "max_queries": Int(0)}

    def __init__(self, n_clusters: int = 8, max_queries: int = 100, random_state=0, progress: bool = False):
        self.n_clusters = n_clusters
        self.max_queries = max_queries
        self.random_state = random_state
        self.progress = progress

    def _validate(self, X, oracle=None, constraints=None):
        """Checked X, oracle and constraints (a Constraints over the rows of X, or None)."""

        where = f"{type(self).__name__}.fit"
        X = check_array(X, name="X", min_rows=2)
        oracle = _check_oracle(oracle, where)
        constraints = as_constraints(constraints, X.shape[0], where=where, soft=False)
        validate_params(self)
        return X, oracle, constraints

    @staticmethod
    def _place(session: _Session, x: int, hoods: list[list[int]], order) -> str:
        """Ask x against the neighbourhoods in ``order``: "joined", "new" (cannot-link to all), "unsure"."""
        unsure = False
        for h in order:
            ans = session.must(x, hoods[h][0])
            if ans is True:
                hoods[h].append(x)
                return "joined"
            if ans is None:
                unsure = True
                if session.exhausted:
                    return "unsure"
        return "unsure" if unsure else "new"

    def fit(self, X, oracle, constraints: Constraints | None = None):
        """Ask up to ``max_queries`` questions about the rows of X (n, d). Returns self.

        ``oracle`` answers pairs (see the module docstring); ``constraints`` (a Constraints, a dict with
        ``must_link``/``cannot_link``, a pair (must_link, cannot_link), or None) is what is known already.

        Attributes set: ``queries_`` (list of (i, j, answer) in asking order), ``constraints_``,
        ``neighborhoods_``
        (list of int arrays), ``n_queries_``.
        """
        X, oracle, constraints = self._validate(X, oracle, constraints)
        n = X.shape[0]
        rng = np.random.default_rng(seed_from(self.random_state))
        s = _Session(n, oracle, int(self.max_queries), constraints, self.progress)
        x_sq = (X * X).sum(1)
        first = int(rng.integers(n))
        hoods: list[list[int]] = [[first]]
        visited = np.zeros(n, bool)
        visited[first] = True
        dmin = np.maximum(x_sq - 2 * X @ X[first] + x_sq[first], 0.0)  # squared distance to the traversed set

        def visit(x):
            nonlocal dmin
            visited[x] = True
            dmin = np.minimum(dmin, np.maximum(x_sq - 2 * X @ X[x] + x_sq[x], 0.0))

        # Explore: farthest-first traversal.
        while not s.exhausted and len(hoods) < self.n_clusters and not visited.all():
            x = int(np.argmax(np.where(visited, -1.0, dmin)))
            visit(x)
            out = self._place(s, x, hoods, self._order(X, x, hoods))
            if out == "new":
                hoods.append([x])
        # Consolidate.
        while not s.exhausted and not visited.all():
            x = self._next_consolidate(rng, visited, dmin)
            visit(x)
            out = self._place(s, x, hoods, self._order(X, x, hoods))
            if out == "new":  # possible when explore ran out of points or answers were unknown
                hoods.append([x])
        s.close()
        self.queries_ = s.queries
        self.constraints_ = s.c
        self.neighborhoods_ = [np.asarray(h, dtype=np.int64) for h in hoods]
        self.n_queries_ = len(s.queries)
        return self

    def _order(self, X, x, hoods):
        cent = np.stack([X[h].mean(0) for h in hoods])
        return np.argsort(((cent - X[x]) ** 2).sum(1), kind="stable")

    def _next_consolidate(self, rng, visited, dmin):
        return int(rng.choice(np.flatnonzero(~visited)))


class ExploreConsolidate(_NeighbourhoodStrategy):
    """Explore-and-Consolidate pair selection (Basu et al. 2004).

    Parameters
    ----------
    n_clusters : int, default 8
        Neighbourhoods to discover in the explore phase (the number of clusters).
    max_queries : int, default 100
    random_state : int or None, default 0 (first point and consolidation draws)
    progress : bool, default False, tqdm bar over the questions.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.repeat([0, 1, 2], 5)
    >>> X = y[:, None] * 10.0 + np.arange(15)[:, None] * 0.01
    >>> s = ExploreConsolidate(n_clusters=3, max_queries=6).fit(X, lambda i, j: bool(y[i] == y[j]))
    >>> len(s.neighborhoods_), s.n_queries_
    (3, 6)
    """


class MinMax(_NeighbourhoodStrategy):
    """MinMax pair selection (Mallapragada et al. 2008): farthest-first consolidation, nearest member first.

    Parameters as :class:`ExploreConsolidate`.
    """

    def _order(self, X, x, hoods):
        near = np.array([((X[h] - X[x]) ** 2).sum(1).min() for h in hoods])  # max similarity = min distance
        return np.argsort(near, kind="stable")

    def _next_consolidate(self, rng, visited, dmin):
        return int(np.argmax(np.where(visited, -1.0, dmin)))


class NPU:
    """Normalised point-based uncertainty (Xiong et al. 2014).

    Parameters
    ----------
    n_clusters : int, default 8
        Clusters of the default clusterer.
    max_queries : int, default 100
    clusterer : estimator or None
        Refitted before each selection as ``clusterer.fit(X, constraints=...)`` and read through ``labels_``;
        default :class:`jaxclust.kmeans.PCKMeans` (``n_init=1``) on the transitive closure of the answers.
    n_estimators : int, default 50, trees of the random forest giving the similarities.
    random_state : int or None, default 0
    progress : bool, default False

    Attributes
    ----------
    queries_, constraints_, neighborhoods_, n_queries_ : as :class:`ExploreConsolidate`.
    """

    _parameter_constraints = {"n_clusters": Int(1), "max_queries": Int(0), "n_estimators": Int(1)}

    def __init__(
        self,
        n_clusters: int = 8,
        max_queries: int = 100,
        clusterer=None,
        n_estimators: int = 50,
        random_state=0,
        progress: bool = False,
    ):
        self.n_clusters = n_clusters
        self.max_queries = max_queries
        self.clusterer = clusterer
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.progress = progress

    def fit(self, X, oracle, constraints: Constraints | None = None):
        """Ask up to ``max_queries`` questions about the rows of X (n, d). Returns self."""
        from sklearn.base import clone
        from sklearn.ensemble import RandomForestClassifier

        X, oracle, constraints = _NeighbourhoodStrategy._validate(self, X, oracle, constraints)
        n = X.shape[0]
        seed = seed_from(self.random_state)
        rng = np.random.default_rng(seed)
        # Fixed table capacity: at most max_queries + 1 items are ever constrained, so PCKMeans compiles once.
        base = (
            self.clusterer
            if self.clusterer is not None
            else PCKMeans(self.n_clusters, n_init=1, random_state=seed, capacity=int(self.max_queries) + 1)
        )
        s = _Session(n, oracle, int(self.max_queries), constraints, self.progress)
        hoods: list[list[int]] = [[int(rng.integers(n))]]
        in_hood = np.zeros(n, bool)
        in_hood[hoods[0][0]] = True
        step = 0
        while not s.exhausted and not in_hood.all():
            step += 1
            if len(hoods) == 1:  # one neighbourhood: nothing to be uncertain about yet
                x = int(rng.choice(np.flatnonzero(~in_hood)))
                p = np.ones(1)
            else:
                model = clone(base).fit(X, constraints=closure_constraints(s.c))
                rf = RandomForestClassifier(
                    n_estimators=int(self.n_estimators), random_state=sklearn_seed(seed + step)
                )
                rf.fit(X, model.labels_)
                p = hood_probabilities(rf.apply(X), hoods)  # (n, L)
                score = npu_scores(p)
                score[in_hood] = -np.inf
                x = int(np.argmax(score))
                p = p[x]
            in_hood[x] = True
            order = np.argsort(-p, kind="stable")
            out = _NeighbourhoodStrategy._place(s, x, hoods, order)
            if out == "new":
                hoods.append([x])
        s.close()
        self.queries_ = s.queries
        self.constraints_ = s.c
        self.neighborhoods_ = [np.asarray(h, dtype=np.int64) for h in hoods]
        self.n_queries_ = len(s.queries)
        return self


def hood_probabilities(leaves: np.ndarray, hoods: list[list[int]]) -> np.ndarray:
    """p(x ∈ N_l) ∝ mean over members y of N_l of the fraction of trees where x and y share a leaf.

    Parameters
    ----------
    leaves : (n, T) int leaf index of each item in each tree (``RandomForestClassifier.apply``).
    hoods : L lists of member indices.

    Returns
    -------
    (n, L) probabilities; rows with no similarity to any neighbourhood are uniform.
    """
    n, T = leaves.shape
    L = len(hoods)
    members = np.concatenate([np.asarray(h, np.int64) for h in hoods])
    hood_id = np.repeat(np.arange(L), [len(h) for h in hoods])
    n_leaves = int(leaves.max()) + 1
    sim = np.zeros((n, L))
    for t in range(T):  # per tree: members per (leaf, hood), gathered at each item's leaf; O(n + L·leaves)
        counts = np.zeros((n_leaves, L))
        np.add.at(counts, (leaves[members, t], hood_id), 1.0)
        sim += counts[leaves[:, t]]
    sim /= T * np.array([len(h) for h in hoods], float)[None, :]
    tot = sim.sum(1, keepdims=True)
    return np.where(tot > 0, sim / np.where(tot > 0, tot, 1.0), 1.0 / L)


def npu_scores(p: np.ndarray) -> np.ndarray:
    """Normalised uncertainty H(p) / E[#queries] per row of p (n, L).

    Neighbourhoods are asked by decreasing probability, so E[#queries] = Σ_r r · p_(r) with p_(1) ≥ p_(2) ≥
    ...
    (the last question is not needed when all others were cannot-links; we keep the simple bound as Xiong et
    al.).
    """
    ps = -np.sort(-p, axis=1)
    ent = -np.sum(np.where(ps > 0, ps * np.log(np.where(ps > 0, ps, 1.0)), 0.0), axis=1)
    cost = ps @ np.arange(1, p.shape[1] + 1, dtype=float)
    return ent / cost
