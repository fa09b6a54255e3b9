"""``NestedDPMM``: the two-level mixture (classes of components, :mod:`jaxclust.dpmm.nested`) as an estimator.

Answers constrain classes, not components: a must-link keeps two items in one class, each in whichever component
of it fits, so a class may be several Gaussian shapes; every item's class comes from the sampled posterior. Its
``samples_`` and ``labels_`` are class labellings, so :class:`~jaxclust.active.ActiveLearner` reads classes from
exact samples (``propagation="pairs"``, its default for this model).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from jaxclust.coclustering import least_squares_sample, relabel
from jaxclust.constraints import Constraints, as_constraints
from jaxclust.dpmm import nested as N
from jaxclust.dpmm import nested_params as NP
from jaxclust.dpmm import nested_splitmerge as MH
from jaxclust.dpmm.alpha import check_alpha_prior, escobar_west
from jaxclust.dpmm.capacity import headroom
from jaxclust.dpmm.chains import chain_rows, repair_labels
from jaxclust.dpmm.families import column_steps
from jaxclust.errors import InvalidInputError
from jaxclust.transfer import to_device
from jaxclust.validation import (
    Int,
    Real,
    Reals,
    check_array,
    check_int,
    check_label_rows,
    reject_constraints_as_y,
    seed_from,
    validate_params,
)

__all__ = ["NestedDPMM"]


def _answers(cons: Constraints | None) -> list[tuple]:
    if cons is None:
        return []
    return [tuple(p) for p in cons.pairs] + [tuple(a) for a in cons.answers]


def _start(cons: Constraints, init_labels) -> np.ndarray:
    """A chain's starting classes: ``init_labels`` repaired to keep every hard answer (a must-linked group takes
    its first item's class, a group cannot-linked to an earlier one in its class moves to another)."""
    return relabel(repair_labels(np.asarray(init_labels), cons)[cons.group_of])


def _rows(labels, n: int, n_chains: int, name: str) -> np.ndarray:
    """(n_chains, n) starting labels from ``labels`` (n,) or (n_chains, n), checked."""
    return chain_rows(check_label_rows(labels, n, name), n, n_chains, name)


def _kmeans_starts(Xs: np.ndarray, n_chains: int, seed: int) -> np.ndarray:
    """Cold starts (n_chains, n): a k-means partition of the standardised ``Xs`` (n, D) into ``min(n,
    _START_CLASSES)`` parts per chain, each chain from its own seeding. Many small parts that follow the data start
    the chains near where a DP mixture's components settle, in few slots: a start with every item its own
    component needs ``n`` slots, and its first sweeps cost ``O(n^2)`` and a compiled program of their own."""
    k = min(len(Xs), _START_CLASSES)
    seeds = np.random.default_rng(seed).integers(2**31 - 1, size=n_chains)
    with warnings.catch_warnings():  # fewer distinct rows than k: some parts stay empty, which relabel drops
        warnings.simplefilter("ignore", ConvergenceWarning)
        return np.stack(
            [relabel(KMeans(k, n_init=1, max_iter=20, random_state=int(s)).fit_predict(Xs)) for s in seeds]
        )


def _parts(starts: np.ndarray, components: np.ndarray, n: int) -> np.ndarray:
    """Component labels (R, n) for chains that start in the classes ``starts`` (R, n) from the given
    ``components`` (R, n, any integers), each cut by class (a component the start's repair split between classes
    becomes one per class)."""
    return relabel(starts.astype(np.int64) * n + relabel(components))


def _slots(occupied: int, n: int) -> int:
    """Component (and class) slots for chains that use ``occupied`` components: a quarter more (at least two),
    rounded up to a power of two of at least ``_MIN_SLOTS``, at most ``n``. Powers of two keep the compiled
    shapes few across the fits of a session (each new shape is one more compile)."""
    want = max(_MIN_SLOTS, occupied + headroom(occupied))
    return min(n, 1 << (want - 1).bit_length())


def _answer_rows(n_answers: int) -> int:
    """Rows the answers are padded to: a power of two of at least ``_MIN_ANSWER_ROWS``, so the refits of a
    session share a compiled program (a session of up to 128 answers, one; each doubling after, one more)."""
    return 1 << (max(n_answers, _MIN_ANSWER_ROWS) - 1).bit_length()


def _row_width(rows: int) -> int:
    """The answers an item's row of the answer table holds for ``rows`` padded answers: a thirty-second of them
    (at least 8). It changes only where the padded rows do (no compile of its own), and holds the items' mean
    number of answers (``2 rows / n``) once ``n >= 64``; an item with more, a representative the session asked
    about many others, reads all the rows. A wider row costs every item's move (``O(W C)``)."""
    return max(8, rows // 32)


def _temper(sweep: int, n_burnin: int, start: float | None) -> float:
    """The power of the likelihood in the block of sweeps from ``sweep``: rising geometrically from ``start`` to 1
    over the first half of the burn-in, block by block, then 1 (always 1 when ``start`` is None)."""
    ramp = (n_burnin // 2) // _BLOCK * _BLOCK
    if start is None or sweep >= ramp:
        return 1.0
    return float(start ** (1.0 - sweep / ramp))


def _pad(state: N.NestedState, K: int) -> N.NestedState:
    """``state`` (chains, ...) with ``K`` component and class slots (the new ones empty)."""
    extra = K - state.u.shape[-1]
    if extra <= 0:
        return state

    def grow(a, fill):
        width = [(0, 0)] * a.ndim
        width[1] = (0, extra)
        return jnp.pad(a, width, constant_values=fill)

    return N.NestedState(
        state.z, grow(state.u, -1), grow(state.count, 0), grow(state.mean, 0.0), grow(state.scatter, 0.0)
    )


def _problem(X: np.ndarray, cons: Constraints, p: dict) -> tuple[np.ndarray, N.NestedData, N.NestedPrior]:
    """The standardised items ``Xs`` (n, D') (a column of one value left out: it tells no items apart), the
    fit's data (answers padded to :func:`_answer_rows`) and the prior of the checked parameters ``p``, its
    rounding from ``resolution`` in the standardised units."""
    D = X.shape[1]
    steps = column_steps(X) if p["resolution"] is None else np.broadcast_to(p["resolution"], D)
    std = X.std(0)
    cols = std > 0 if np.any(std > 0) else np.ones(D, bool)
    scale = np.where(std[cols] > 0, std[cols], 1.0)
    Xs = (X[:, cols] - X[:, cols].mean(0)) / scale
    prior = N.NestedPrior(
        jnp.zeros(Xs.shape[1], jnp.float32),
        jnp.float32(p["kappa"]),
        jnp.float32(p["shape"]),
        jnp.full(Xs.shape[1], p["scale"] * (p["shape"] - 1.0), jnp.float32),
        rounding=to_device((steps[cols] / scale) ** 2 / 12.0, np.float32),
    )
    rows = _answer_rows(len(cons.pairs) + len(cons.answers))
    data = N.pad_answers(N.prepare(Xs, cons, row_width=_row_width(rows)), rows)
    return Xs, data, prior


def _initial_state(cons: Constraints, data: N.NestedData, init: np.ndarray, components) -> N.NestedState:
    """The chains' first state (chains, ...): the classes ``init`` (chains, n) repaired to keep every hard
    answer, with the given ``components`` (chains, n) cut where the repair moved items, else one component per
    class, in :func:`_slots` slots."""
    n = cons.n
    starts = np.stack([_start(cons, row) for row in init])
    parts = starts if components is None else _parts(starts, components, n)
    K = _slots(int(parts.max()) + 1, n)
    owner = np.full((len(parts), K), -1, np.int32)
    for c, (z_c, cls_c) in enumerate(zip(parts, starts, strict=True)):
        owner[c, z_c] = cls_c
    return jax.vmap(lambda z, u: N.init(z, u, data, K))(to_device(parts, np.int32), to_device(owner))


def _sample(state: N.NestedState, keys, data, prior, p: dict, burn: int, anneal: float | None):
    """Every sweep of every chain, one per key (chains, sweeps), in blocks of :data:`_BLOCK`: ``(classes,
    components, gammas, K)``, the labels (chains, sweeps, n) and ``gamma`` (chains, sweeps) after each sweep and
    the slots at the end. A block in which a chain lacked a slot is redone with twice the slots and the same
    keys; the slots double ahead when the chains use more than all but
    :func:`~jaxclust.dpmm.capacity.headroom` of them. ``gamma`` is drawn after each sweep when ``p["gamma_prior"]``
    is given, else it stays ``p["gamma"]``."""
    n, K = data.X.shape[0], state.u.shape[-1]
    n_sweeps = keys.shape[1]
    gamma = to_device(np.full(keys.shape[0], p["gamma"], np.float32))
    infer = p["gamma_prior"] is not None
    shape, rate = (np.float32(v) for v in (p["gamma_prior"] or (1.0, 1.0)))
    cls, comp, gammas = [], [], []
    for lo in range(0, n_sweeps, _BLOCK):
        tempered = prior._replace(temper=jnp.float32(_temper(lo, burn, anneal)))
        while True:
            out, g_out, (c_b, z_b, g_b, overflow) = _run_block(
                state,
                gamma,
                keys[:, lo : lo + _BLOCK],
                data,
                tempered,
                p["alpha"],
                (np.bool_(infer), shape, rate),
                jnp.int32(p["n_split_merge"]),
            )
            if not bool(jnp.any(overflow)):
                break
            K = min(n, 2 * K)
            state = _pad(state, K)
        state, gamma = out, g_out
        cls.append(np.asarray(c_b))
        comp.append(np.asarray(z_b))
        gammas.append(np.asarray(g_b))
        occupied = int(jnp.max(jnp.sum(state.count > 0, -1)))
        if occupied + headroom(K) > K and K < n and lo + _BLOCK < n_sweeps:
            K = max(_slots(occupied, n), min(n, 2 * K))
            state = _pad(state, K)
    return np.concatenate(cls, 1), np.concatenate(comp, 1), np.concatenate(gammas, 1), K


# sweeps run between two checks of the slots
_BLOCK = 10
# the fewest slots a chain gets (a compiled shape)
_MIN_SLOTS = 16
# the parts of a cold start (a chain's first classes, one component each): they fit the fewest slots with a quarter
# to spare, so a first fit and the warm refits after it share a compiled shape where the chains stay that small
_START_CLASSES = 12
# every this many sweeps of a block, the items move by the collapsed sweep (the others given sampled parameters)
_COLLAPSED_EVERY = 5
# the fewest rows of answers (a compiled shape): a padded row costs an item move little, a new shape a compile
_MIN_ANSWER_ROWS = 128


@jax.jit
def _run_block(state, gamma, keys, data, prior, alpha, gamma_prior, n_split_merge):
    """Sweeps of every chain, one per key (chains, B), from each chain's ``gamma`` (chains,): ``(state, gamma,
    (classes, components, gammas, overflow))``, the labels (chains, B, n) and ``gamma`` (chains, B) after each
    sweep and whether a chain lacked a slot (chains,). ``gamma_prior`` ``(infer, shape, rate)``: when ``infer``,
    each sweep ends with an Escobar-West draw of ``gamma`` given the classes and components (exact: the answers
    are observations about classes, so ``gamma``'s conditional is the CRP's). ``n_split_merge`` is traced, so a
    session's first fit and its warm refits (fewer proposals) share a compiled program."""
    C = state.u.shape[-1]
    infer, shape, rate = gamma_prior

    def sweep(carry, key_t):
        key, t = key_t
        st, over, gamma = carry
        k1, k2, k3, k4, k5 = jax.random.split(key, 5)
        st = N.init_from(st.z, st.u, data, C)  # statistics afresh: the moves update them one item at a time
        # given sampled parameters: cheaper; collapsed every _COLLAPSED_EVERY sweeps: it opens new components
        # from the prior predictive, which a parameter drawn from the prior seldom fits in many columns
        st, i1 = jax.lax.cond(
            t % _COLLAPSED_EVERY == _COLLAPSED_EVERY - 1,
            lambda s: N.item_sweep(k1, s, data, prior, alpha, gamma, C),
            lambda s: NP.item_sweep_given_params(k1, s, data, prior, alpha, gamma, C),
            st,
        )
        st, i2 = N.component_sweep(k2, st, data, prior, alpha, gamma, C)
        st, i3 = MH.class_split_merge(k3, st, data, prior, alpha, gamma, C, n_split_merge)
        st, i4 = MH.component_split_merge(k4, st, data, prior, alpha, gamma, C, n_split_merge)
        st, i5 = MH.group_sweep(k5, st, data, prior, alpha, gamma, C, n_split_merge)
        over = over | i1.overflow | i2.overflow | i3.overflow | i4.overflow | i5.overflow
        _, comps_per_class = N.class_counts(st.u, st.count, C)
        drawn = escobar_west(
            jax.random.fold_in(key, 6),
            gamma,
            jnp.sum(comps_per_class > 0),
            jnp.sum(st.count > 0),
            shape,
            rate,
        )
        gamma = jnp.where(infer, drawn, gamma)
        return (st, over, gamma), (N.class_labels(st), st.z, gamma)

    def chain(st, g, ks):
        (st, over, g), labels = jax.lax.scan(
            sweep, (st, jnp.zeros((), bool), g), (ks, jnp.arange(ks.shape[0]))
        )
        return st, g, labels + (over,)

    return jax.vmap(chain)(state, gamma, keys)


class NestedDPMM(ClusterMixin, BaseEstimator):
    """Classes of Gaussian components, sampled with their components; answers act on classes.

    The model and its moves are in :mod:`jaxclust.dpmm.nested`: components a CRP(``alpha``) over the items, each
    a diagonal Gaussian with its own mean and precision (as in :class:`~jaxclust.DPMM`), and classes a
    CRP(``gamma``) over the components, tied by nothing but the answers. Without answers the components are a
    DP mixture's and ``gamma`` sets how readily the samples join them: two components share a class with prior
    probability ``1 / (1 + gamma)``. Two classes of ``a`` and ``b`` components that no answer keeps apart are one
    with prior odds ``Γ(a+b) / (gamma Γ(a) Γ(b))`` (63 for ``a = b = 5`` at the default): where must-links gather
    the components of two classes, only a cannot-link between them keeps the two apart.

    Each iteration of each chain is an item sweep (given sampled component parameters,
    :mod:`jaxclust.dpmm.nested_params`; every fifth one collapsed, which opens new components more readily), a
    component sweep, and ``n_split_merge`` Metropolis-Hastings proposals of each kind: splits and merges of whole
    classes, of components inside a class, and moves of a whole must-linked group to another class.

    Columns are standardised; a column of one value tells no items apart and is left out. The prior of a
    component: mean 0; ``kappa`` (component means spread over about ``1/sqrt(kappa)`` within-component standard
    deviations); a Gamma(``shape``, ``scale * (shape - 1)``) precision, so a component's expected variance is
    ``scale`` times a column's (the defaults are :class:`~jaxclust.DPMM`'s).

    Each value stands for the interval its column is rounded to (``resolution``): an item's likelihood is the
    geometric mean of its Gaussian over ``[x - h/2, x + h/2]``, which adds ``h²/12`` per item to a component's
    scatter. Taken as exact, the items of a column of few values (a flag, a count, a rating) fit a Gaussian of no
    spread wherever they share one value, whose marginal grows without bound with the items in it: the column,
    not the data's shapes, would decide the components. By default each column's step is the median gap between
    its consecutive distinct values, its rounding for such columns and a sliver of its spread for continuous ones.

    Each chain starts from a k-means partition of the standardised items into 12 parts (or ``n``), each chain
    from its own seeding (drawn from ``random_state``), each part a class of one component, repaired to keep every
    hard answer (a must-linked group takes its first item's part; a group cannot-linked to an earlier one in its
    part moves to another). A warm start (``init_labels``, e.g. a previous fit's ``final_labels_``) starts from
    those classes, repaired the same way, with one component per class (or ``init_components``). With
    ``anneal_from`` (and no ``init_labels``), the first half of the burn-in is annealed: the likelihood is raised
    to a power that rises geometrically from ``anneal_from`` to 1, block by block, which flattens the posterior
    the chains start in; the rest of the burn-in and every kept sample are drawn from the model itself. It is off
    by default: the flattened posterior lets the chains merge classes that must split again later.

    Slots: ``K`` component and as many class slots, a compiled shape: the start's components plus a quarter,
    rounded up to a power of two (at least 16, at most ``n``). ``K`` doubles when the chains use more than three
    quarters of it, and when a chain runs short the block of sweeps that ran short is redone with twice the slots
    and the same keys, so no kept sample comes from a truncated sampler. The answers are padded to a power of two
    of rows (the must-linked groups are laid out in arrays of ``n``) and the number of proposals is not part of the
    compiled shape, so the fits of a session share a few compiled programs. A sweep costs ``O(n K D)``.

    Parameters
    ----------
    n_chains, n_burnin, n_samples, thin : int
    alpha, gamma : float
        Concentrations of the components inside a class and of the classes (``gamma``: the starting value when
        ``gamma_prior`` is given).
    gamma_prior : (shape, rate) or None
        A Gamma(shape, rate) prior on ``gamma``, which is then drawn after every sweep of every chain by the
        Escobar-West update given the numbers of classes and components (exact: answers are observations about
        classes, so ``gamma``'s conditional is the CRP's). Without answers the classes tell nothing about
        ``gamma`` and its posterior is its prior; answers that keep many classes apart raise it. None (default):
        ``gamma`` fixed.
    kappa, shape, scale : float
        The prior (above).
    n_split_merge : int
        Metropolis-Hastings proposals per iteration, of each kind.
    anneal_from : float in (0, 1) or None
        The power of the likelihood at the start of an annealed burn-in (above); None (default): no annealing.
    resolution : float, array (D,) or None
        The step each column's values are rounded to, in ``X``'s units (one for every column, or one per column);
        0: values are exact. None (default): each column's median gap between consecutive distinct values.
    random_state : int or None

    Attributes
    ----------
    samples_ : ndarray (n_chains * n_samples, n) - class labellings, chain-major
    components_ : ndarray (n_chains * n_samples, n) - the component of each item in the same samples
    labels_ : ndarray (n,) - the class labelling of least Binder loss to the others
    final_labels_ : ndarray (n_chains, n) - each chain's last class labelling (a warm start for the next fit)
    final_components_ : ndarray (n_chains, n) - each chain's last components (the same warm start's)
    gamma_samples_ : ndarray (n_chains * n_samples,) - ``gamma`` at each kept sample (``gamma`` throughout when it
        is fixed)
    n_slots_ : int - component (and class) slots per chain at the end, a compiled shape
    """

    #: Its samples are class labellings: :class:`~jaxclust.active.ActiveLearner` reads them as they are
    #: (``propagation="pairs"``), with no class layer over them.
    samples_classes = True

    _parameter_constraints = {
        "n_chains": Int(1),
        "n_burnin": Int(0),
        "n_samples": Int(1),
        "thin": Int(1),
        "alpha": Real(0.0, strict=True),
        "gamma": Real(0.0, strict=True),
        "kappa": Real(0.0, strict=True),
        "shape": Real(0.0, strict=True),
        "scale": Real(0.0, strict=True),
        "n_split_merge": Int(0),
        "anneal_from": Real(0.0, 1.0, strict=True, none=True),
        "resolution": Reals(Real(0.0, none=True)),
    }

    def __init__(
        self,
        n_chains: int = 4,
        n_burnin: int = 100,
        n_samples: int = 10,
        thin: int = 5,
        alpha: float = 1.0,
        gamma: float = 10.0,
        gamma_prior=None,
        kappa: float = 0.05,
        shape: float = 2.0,
        scale: float = 0.5,
        n_split_merge: int = 20,
        anneal_from: float | None = None,
        resolution=None,
        random_state=None,
    ):
        self.n_chains = n_chains
        self.n_burnin = n_burnin
        self.n_samples = n_samples
        self.thin = thin
        self.alpha = alpha
        self.gamma = gamma
        self.gamma_prior = gamma_prior
        self.kappa = kappa
        self.shape = shape
        self.scale = scale
        self.n_split_merge = n_split_merge
        self.anneal_from = anneal_from
        self.resolution = resolution
        self.random_state = random_state

    def fit(
        self,
        X,
        y=None,
        constraints=None,
        init_labels=None,
        n_burnin=None,
        thin=None,
        init_components=None,
        n_split_merge=None,
    ) -> NestedDPMM:
        """Sample the classes of ``X`` (n, D) under ``constraints`` (a :class:`~jaxclust.Constraints`, a dict or
        ``(must_link, cannot_link)``; soft answers included). ``init_labels`` (n_chains, n) class labellings start
        the chains when every hard answer allows them, with their components ``init_components`` (n_chains, n)
        when given (e.g. a previous fit's ``final_labels_`` and ``final_components_``), else one component per
        class; ``n_burnin``, ``thin`` and ``n_split_merge`` override the parameters for this fit (a session's warm
        refits run fewer sweeps and proposals than a first fit)."""
        p = validate_params(self)
        reject_constraints_as_y(y, "NestedDPMM.fit", "pass them as constraints=")
        X = check_array(X, name="X", min_rows=2)
        n, D = X.shape
        cons = as_constraints(constraints, n, where="NestedDPMM.fit")
        cons = Constraints.from_answers(n, _answers(cons), on_conflict="drop")
        burn = p["n_burnin"] if n_burnin is None else check_int(n_burnin, "n_burnin", minimum=0)
        if thin is not None:
            p["thin"] = check_int(thin, "thin", minimum=1)
        if n_split_merge is not None:
            p["n_split_merge"] = check_int(n_split_merge, "n_split_merge", minimum=0)
        if np.ndim(p["resolution"]) == 1 and len(p["resolution"]) != D:
            raise InvalidInputError(
                f"NestedDPMM(resolution={self.resolution!r}): expected a number or {D} of them, one per column of "
                f"X; got {len(p['resolution'])}"
            )
        Xs, data, prior = _problem(X, cons, p)
        init = None if init_labels is None else _rows(init_labels, n, p["n_chains"], "init_labels")
        if init_components is not None:
            if init is None:
                raise InvalidInputError(
                    "init_components: given without init_labels (the classes they sit in)"
                )
            init_components = _rows(init_components, n, p["n_chains"], "init_components")
        cold = init is None
        if cold:
            init = _kmeans_starts(Xs, p["n_chains"], seed_from(self.random_state))
        state = _initial_state(cons, data, init, init_components)
        n_sweeps = burn + p["n_samples"] * p["thin"]
        keys = jax.random.split(jax.random.key(seed_from(self.random_state)), (p["n_chains"], n_sweeps))
        anneal = p["anneal_from"] if cold else None
        p["gamma_prior"] = check_alpha_prior(self.gamma_prior, "gamma_prior")
        cls, comp, gammas, K = _sample(state, keys, data, prior, p, burn, anneal)
        keep = slice(burn + p["thin"] - 1, None, p["thin"])
        self.n_slots_ = K
        self.samples_ = relabel(cls[:, keep].reshape(-1, n))
        self.components_ = relabel(comp[:, keep].reshape(-1, n))
        self.final_labels_ = relabel(cls[:, -1])
        self.final_components_ = relabel(comp[:, -1])
        self.gamma_samples_ = gammas[:, keep].reshape(-1)
        self.labels_ = self.samples_[least_squares_sample(self.samples_)]
        self.n_features_in_ = D
        return self

    def fit_predict(self, X, y=None, constraints=None, **kw) -> np.ndarray:
        return self.fit(X, constraints=constraints, **kw).labels_
