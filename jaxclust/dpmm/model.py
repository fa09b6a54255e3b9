"""The constrained DPMM: a functional ``sample`` and the scikit-learn style :class:`DPMM` estimator."""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from jaxclust.coclustering import coclustering
from jaxclust.constraints import as_constraints
from jaxclust.dpmm import chains, distributed
from jaxclust.dpmm.alpha import check_alpha_prior
from jaxclust.dpmm.diagnostics import chain_diagnostics, split_merge_summary
from jaxclust.dpmm.kernels import SAMPLERS
from jaxclust.dpmm.predictive import assignment_probabilities
from jaxclust.dpmm.problem import PreparedData, location_scale, prepare_data, prepare_problem, start_labels
from jaxclust.errors import InvalidInputError, JaxclustWarning, NotFittedError
from jaxclust.validation import (
    Int,
    Options,
    Real,
    check_array,
    check_label_rows,
    check_rule,
    prng_key,
)

__all__ = [
    "DPMM",
    "sample",
    "as_constraints",
    "coclustering",
    "choose_sampler",
    "prepare_data",
    "PreparedData",
    "resolve_settings",
    "SAMPLER_DEFAULTS",
]

# ``sampler="auto"`` runs the parallel sub-cluster sampler from this many must-link groups up, or from this many
# group-features (groups x columns: the collapsed sweep visits the groups one after another, each at a cost
# proportional to the columns), e.g. 1,024 texts embedded in 256 dimensions.
AUTO_SUBCLUSTER_GROUPS = 5000
AUTO_SUBCLUSTER_WORK = 2**18

# Chains and iterations when the caller leaves them unset (see :class:`DPMM`).
SAMPLER_DEFAULTS = {
    # Vlachos et al. (2010)'s settings, whose active-learning curves they are: 100 samples for link entropy
    "collapsed": dict(n_chains=5, n_burnin=100, n_samples=20, thin=5),
    # large n, where time matters: 40 samples; burn-in 3x what 20 separated blobs need to reach the mode
    "subcluster": dict(n_chains=2, n_burnin=30, n_samples=20, thin=2),
}


#: The rules of a fit's settings: :class:`DPMM`'s hyperparameters and the same arguments of :func:`sample`.
FIT_RULES = {
    "sampler": Options(("auto",) + SAMPLERS),
    "n_chains": Int(1, none=True),
    "n_burnin": Int(0, none=True),
    "n_samples": Int(1, none=True),
    "thin": Int(1, none=True),
    "capacity": Int(1, none=True),
    "split_merge": Int(0),
    "alpha": Real(0.0, strict=True),
}


def resolve_settings(sampler: str, n_groups: int, n_features: int = 1, **given) -> dict:
    """``{"sampler", "n_chains", "n_burnin", "n_samples", "thin"}``: the sampler ``"auto"`` resolves to for
    ``n_groups`` must-link groups of ``n_features`` columns, and its defaults for every setting given as
    ``None``."""
    sampler = choose_sampler(sampler, n_groups, n_features)
    out = {"sampler": sampler, **SAMPLER_DEFAULTS[sampler]}
    out.update({k: v for k, v in given.items() if v is not None})
    return out


def choose_sampler(sampler: str, n_groups: int, n_features: int = 1) -> str:
    """``"collapsed"`` or ``"subcluster"``: ``sampler`` itself, or for ``"auto"`` the collapsed sampler below
    ``AUTO_SUBCLUSTER_GROUPS`` groups and ``AUTO_SUBCLUSTER_WORK`` groups x features (its sweep is sequential
    over groups) and the sub-cluster sampler from either."""
    sampler = check_rule(FIT_RULES["sampler"], sampler, "sampler")
    if sampler == "auto":
        small = n_groups < AUTO_SUBCLUSTER_GROUPS and n_groups * n_features < AUTO_SUBCLUSTER_WORK
        return "collapsed" if small else "subcluster"
    return sampler


def sample(
    key,
    X,
    constraints=None,
    prior=None,
    *,
    alpha: float = 1.0,
    alpha_prior=None,
    n_chains: int | None = None,
    n_burnin: int | None = None,
    n_samples: int | None = None,
    thin: int | None = None,
    capacity: int | None = None,
    init_labels=None,
    partner_capacity: int | None = None,
    dtype=jnp.float32,
    progress: bool = False,
    sampler: str = "auto",
    split_merge: int = 1,
    mesh=None,
) -> chains.ChainResult:
    """Draw posterior samples of the partition under a (constrained) DPMM.

    Each iteration is ``split_merge`` rounds of exact split-merge proposals over all components
    (:mod:`jaxclust.dpmm.splitmerge`) followed by a collapsed Gibbs sweep over must-link groups
    (``sampler="collapsed"``) or the parallel restricted step of the sub-cluster sampler
    (``sampler="subcluster"``, :mod:`jaxclust.dpmm.subcluster`). Every chain starts with all items in one
    component (the cannot-links permitting): a start that favours no partition, which the split moves leave
    within a few iterations.

    Parameters
    ----------
    key : PRNG key or int seed
    X : array-like, shape (n, D)
    constraints : Constraints, dict or (must_link, cannot_link), optional
    prior : NormalGamma | NormalInverseWishart | DirichletMultinomial, optional
        ``None`` uses :meth:`NormalGamma.from_data` (data mean, kappa 0.05, shape 2, rate 0.5 * var, each
        column's rounding from its step).
    alpha : float
        Concentration (the starting value when ``alpha_prior`` is given).
    alpha_prior : (shape, rate), optional
        Gamma prior: alpha is then inferred by Escobar-West (exact: constraints are treated as observations).
    n_chains, n_burnin, n_samples, thin : int, optional
        Chains; iterations before the first retained sample; retained samples per chain; iterations between
        retained samples. ``None``: the sampler's defaults, ``SAMPLER_DEFAULTS`` (see :class:`DPMM`).
    capacity : int, optional
        Smallest initial number of component slots (default ``capacity.MIN_SLOTS``). The slots start at least two
        above the initial components (a multiple of 4, at most one per group row) and double when a chain comes
        within a quarter of the capacity (at least 2 slots) of it, or runs out, in which case the block of sweeps
        is redone with more slots (:func:`~jaxclust.dpmm.capacity.grown_capacity`). Never a truncation.
    init_labels : array, shape (n_chains, n) or (n,), optional
        Start of each chain (e.g. a previous fit's ``final_labels_``); repaired to satisfy the constraints.
    partner_capacity : int, optional
        Width of the padded partner table of cannot-links and soft answers (default 8); a group with more
        partners continues in spill rows (see :func:`jaxclust.dpmm.state.prepare`). Split over devices
        (``mesh``) the table has no spill rows and widens to the largest degree instead.
    dtype : float dtype of the sampler's arithmetic (float32 by default; statistics are centred).
    progress : bool
        A progress bar over blocks of iterations.
    sampler : {"auto", "collapsed", "subcluster"}
        ``"auto"``: collapsed below ``AUTO_SUBCLUSTER_GROUPS`` = 5,000 must-link groups and below
        ``AUTO_SUBCLUSTER_WORK`` = 262,144 groups x features, sub-cluster from either.
    split_merge : int
        Split-merge rounds per iteration (0 turns them off and leaves the local moves alone, which cannot
        split a component: only for comparison).
    mesh : None, "all" or a one-axis jax.sharding.Mesh
        Devices to run on, of this process or of several (``jax.distributed``; see
        :mod:`jaxclust.dpmm.distributed`): ``"all"`` is every device of every process. The sub-cluster sampler
        splits the must-link groups over them, the collapsed sampler the chains. Every process calls
        ``sample`` with the same arguments and gets the same result, the single-device result for the same
        seed up to float rounding (:mod:`jaxclust.dpmm.distributed`). ``None``: this process's devices, chains
        split over them when they divide evenly.

    Returns
    -------
    ChainResult
    """
    X = check_array(X, name="X", min_rows=2)
    if init_labels is not None:  # the labels now, their number of rows once the chains are known
        init_labels = check_label_rows(init_labels, X.shape[0], "init_labels")
    checked = _validate(
        X,
        as_constraints(constraints, X.shape[0], where="jaxclust.dpmm.sample"),
        sampler=sampler,
        n_chains=n_chains,
        n_burnin=n_burnin,
        n_samples=n_samples,
        thin=thin,
        alpha=alpha,
        alpha_prior=alpha_prior,
        capacity=capacity,
        split_merge=split_merge,
        mesh=mesh,
        init_labels=init_labels,
    )
    return _run(key, checked, prior, partner_capacity, dtype, progress)


class _Checked(NamedTuple):
    """The arguments of one fit, validated (once per fit: :func:`sample` and :meth:`DPMM.fit` both validate
    and then call :func:`_run`, which checks nothing again)."""

    X: np.ndarray
    constraints: Any
    settings: dict
    alpha: float
    alpha_prior: Any
    capacity: int | None
    split_merge: int
    mesh: Any
    item_labels: np.ndarray  # (n_chains, n): the chains' starting labels (zeros: one component)


def _validate(
    X,
    constraints,
    *,
    sampler,
    n_chains,
    n_burnin,
    n_samples,
    thin,
    alpha,
    alpha_prior,
    capacity,
    split_merge,
    mesh,
    init_labels=None,
) -> _Checked:
    """Every setting of a fit checked by its rule in :data:`FIT_RULES` (named errors), the chain settings
    resolved (``resolve_settings``) and ``init_labels``' rows counted, before any work. ``X``, ``constraints`` and
    ``init_labels``' labels come checked (``check_array``, ``as_constraints``, ``check_label_rows``)."""
    given = dict(
        sampler=sampler,
        n_chains=n_chains,
        n_burnin=n_burnin,
        n_samples=n_samples,
        thin=thin,
        capacity=capacity,
        split_merge=split_merge,
        alpha=alpha,
    )
    v = {name: check_rule(FIT_RULES[name], value, name) for name, value in given.items()}
    n_groups = X.shape[0] if constraints is None else constraints.n_groups
    chain_settings = {k: v[k] for k in ("n_chains", "n_burnin", "n_samples", "thin")}
    settings = resolve_settings(v["sampler"], n_groups, X.shape[1], **chain_settings)
    return _Checked(
        X,
        constraints,
        settings,
        v["alpha"],
        check_alpha_prior(alpha_prior),
        v["capacity"],
        v["split_merge"],
        None if mesh is None else distributed.resolve_mesh(mesh),
        _start_rows(init_labels, X.shape[0], settings["n_chains"]),
    )


def _start_rows(init_labels, n: int, n_chains: int) -> np.ndarray:
    """(n_chains, n) item labels to start the chains from: ``init_labels`` (n,) or (n_chains, n), its labels
    checked (``check_label_rows``), or zeros (every chain in one component)."""
    if init_labels is None:
        return np.zeros((n_chains, n), dtype=np.int64)
    return chains.chain_rows(init_labels, n, n_chains, "init_labels")


@jax.jit
def _second_key(key):
    """``jax.random.split(key)[1]`` as one small program (eagerly it is three)."""
    return jax.random.split(key)[1]


def _run(key, checked: _Checked, prior, partner_capacity, dtype, progress) -> chains.ChainResult:
    """The fit itself, from validated arguments (see :func:`sample`)."""
    X, constraints, mesh = checked.X, checked.constraints, checked.mesh
    n = X.shape[0]
    sampler, n_burnin, n_samples, thin = (
        checked.settings[k] for k in ("sampler", "n_burnin", "n_samples", "thin")
    )
    problem = prepare_problem(
        X,
        constraints,
        prior,
        sampler=sampler,
        split_merge=checked.split_merge,
        dtype=dtype,
        partner_capacity=partner_capacity,
        mesh=mesh,
    )
    key = prng_key(key)
    k_run = _second_key(key)
    return chains.run_chains(
        k_run,
        problem.data,
        problem.family,
        start_labels(checked.item_labels, constraints, n),
        alpha=checked.alpha,
        alpha_prior=checked.alpha_prior,
        n_burnin=n_burnin,
        n_samples=n_samples,
        thin=thin,
        capacity=checked.capacity,
        progress=progress,
        spec=problem.spec,
        mesh=mesh,
    )


class DPMM(ClusterMixin, BaseEstimator):
    """Dirichlet process mixture with must-link / cannot-link constraints, sampled by MCMC with split-merge.

    Two samplers, both exact for the constrained posterior (constraints as observations) and both starting
    every chain with all items in one component:

    * ``"collapsed"``: per iteration, a round of split-merge proposals over all components
      (:mod:`jaxclust.dpmm.splitmerge`) and a collapsed Gibbs sweep over must-link groups (sequential over
      groups; many chains in parallel). Best below a few thousand groups.
    * ``"subcluster"``: split-merge, then every group moves at once given drawn component weights and
      parameters (:mod:`jaxclust.dpmm.subcluster`): one matrix product per iteration, for large n.
    * ``"auto"`` (default): collapsed below ``AUTO_SUBCLUSTER_GROUPS`` = 5,000 must-link groups and below
      ``AUTO_SUBCLUSTER_WORK`` = 262,144 groups x features (1,024 texts in 256 dimensions), sub-cluster from
      either.

    Defaults for the chains (any of them can be set): collapsed, 5 chains x (100 burn-in + 20 samples 5 apart),
    the settings of Vlachos et al. (2010) whose active-learning curves they are (100 samples for link
    entropy); sub-cluster, 2 chains x (30 burn-in + 20 samples 2 apart), 40 samples for link entropy at the
    sizes where time matters (on separated data the chains reach the posterior mode in about 10 iterations).
    Either way these samples are draws from a sampler that mixes across splits and merges; ``diagnostics_``
    reports split R-hat and ESS of the log joint, the number of components and alpha.

    Many chains run at once (``vmap``; sharded over devices when several are present: on a multi-core CPU, set
    ``XLA_FLAGS=--xla_force_host_platform_device_count=<cores>`` before JAX starts). With ``mesh="all"`` the fit
    runs over every device of every process of a ``jax.distributed`` job (:mod:`jaxclust.dpmm.distributed`):
    the sub-cluster sampler splits the must-link groups over the devices, the collapsed sampler the chains;
    every process fits the same data and gets the same attributes.

    Parameters
    ----------
    prior : NormalGamma | NormalInverseWishart | DirichletMultinomial, optional
        Component family and prior. ``None``: a data-driven diagonal-Gaussian prior,
        :meth:`NormalGamma.from_data` (mean = column means, kappa = 0.05, shape = 2, rate = 0.5 * column
        variance: a component's expected variance is half the data's; each value standing for the interval of
        its column's step, the median gap between the column's distinct values, so that a column of few values
        cannot glue components); constant columns are left out with a warning (:func:`prepare_data`). An
        explicit prior is used on every column as given (``NormalGamma(rounding=0)`` by default).
    alpha : float
        DP concentration (the initial value when ``alpha_prior`` is set).
    alpha_prior : (shape, rate), optional
        Gamma(shape, rate) prior on alpha, inferred by the Escobar-West update. Constraints are treated as
        observations (likelihood 1[z satisfies C]), so that update is exact.
    n_chains, n_burnin, n_samples, thin : int, optional
        Chains; iterations before the first retained sample; retained samples per chain; iterations between
        them. ``None``: the sampler's defaults above.
    capacity : int, optional
        Initial number of component slots per chain (default 32, at most the number of items), as in
        :func:`sample`. Not a truncation: the slots double when a chain's components come within a quarter of
        the capacity, and when a chain runs out the block of iterations is also redone (counted in
        ``n_capacity_growths_`` and ``n_overflow_redos_``). Each new capacity compiles the sampler once more.
    max_components : int, optional
        Deprecated spelling of ``capacity`` (a ``FutureWarning``; giving both with different values is an
        error).
    random_state : int, optional
    sampler : {"auto", "collapsed", "subcluster"}
    split_merge : int
        Split-merge rounds per iteration; 0 leaves the local moves alone, which cannot split a component (for
        comparisons only).
    mesh : None, "all" or a one-axis jax.sharding.Mesh
        Devices to fit on (see :func:`sample`); the samples are those of the single-device fit with the same
        ``random_state``.

    Attributes
    ----------
    samples_ : ndarray (n_chains * n_samples, n_items), int - retained samples, chain-major
    labels_ : ndarray (n_items,) - the retained sample of highest log joint
    coclustering_ : ndarray (n_items, n_items) - probability that two items share a component
    alpha_samples_, log_joint_ : ndarray (n_chains * n_samples,)
    n_components_ : int - number of components in ``labels_``
    final_labels_ : ndarray (n_chains, n_items) - last state of each chain (warm start for the next fit)
    diagnostics_ : dict - ``r_hat``/``ess`` per trace name, the per-sweep ``traces``, and ``split_merge``: the
        split-merge moves proposed and accepted over all sweeps of all chains and their acceptance rates
        (:func:`jaxclust.dpmm.diagnostics.split_merge_summary`)
    n_capacity_growths_ : int
    n_overflow_redos_ : int
    capacity_ : int - final number of component slots
    settings_ : dict - the sampler and chain settings the fit used (defaults resolved)
    """

    #: The declared rules of its hyperparameters (checked when it fits; ``prior``, ``alpha_prior`` and ``mesh``
    #: by their own readers).
    _parameter_constraints = FIT_RULES

    def __init__(
        self,
        prior=None,
        alpha=1.0,
        alpha_prior=None,
        n_chains=None,
        n_burnin=None,
        n_samples=None,
        thin=None,
        capacity=None,
        random_state=0,
        sampler="auto",
        split_merge=1,
        mesh=None,
        max_components=None,
    ):
        self.prior = prior
        self.alpha = alpha
        self.alpha_prior = alpha_prior
        self.n_chains = n_chains
        self.n_burnin = n_burnin
        self.n_samples = n_samples
        self.thin = thin
        self.capacity = capacity
        self.random_state = random_state
        self.sampler = sampler
        self.split_merge = split_merge
        self.mesh = mesh
        self.max_components = max_components

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None, progress=False, thin=None):
        """Sample the posterior over partitions of ``X`` (n, D) under ``constraints``.

        Parameters
        ----------
        X : array-like, shape (n, D)
        constraints : Constraints, dict or (must_link, cannot_link), optional
            Contradictory sets raise ``ConstraintConflictError`` before any sampling.
        init_labels : array, shape (n_chains, n), optional
            Warm start, e.g. ``previous.final_labels_``; repaired to satisfy the constraints.
        n_burnin : int, optional
            Overrides the constructor's burn-in for this fit (e.g. short burn-in after a warm start).
        progress : bool
            Show a progress bar over the blocks of iterations.
        thin : int, optional
            Overrides the constructor's ``thin`` for this fit (an active session's warm refits keep consecutive
            samples).
        """
        X = check_array(X, name="X", min_rows=2)
        if init_labels is not None:  # the labels now, their number of rows once the chains are known
            init_labels = check_label_rows(init_labels, X.shape[0], "init_labels")
        checked = _validate(
            X,
            as_constraints(constraints, X.shape[0], where="DPMM.fit"),
            sampler=self.sampler,
            n_chains=self.n_chains,
            n_burnin=self.n_burnin if n_burnin is None else n_burnin,
            n_samples=self.n_samples,
            thin=self.thin if thin is None else thin,
            alpha=self.alpha,
            alpha_prior=self.alpha_prior,
            capacity=self._capacity(),
            split_merge=self.split_merge,
            mesh=self.mesh,
            init_labels=init_labels,
        )
        self.settings_ = checked.settings
        res = _run(self.random_state, checked, self.prior, None, jnp.float32, progress)
        C, S, n = res.samples.shape
        self.samples_ = res.samples.reshape(C * S, n).astype(np.int64)
        self.log_joint_ = res.log_joint.reshape(-1).astype(np.float64)
        self.alpha_samples_ = res.alpha.reshape(-1).astype(np.float64)
        best = int(np.argmax(self.log_joint_))
        self.labels_ = self.samples_[best].copy()
        self.n_components_ = int(self.labels_.max()) + 1
        self._coclustering = None
        self.final_labels_ = res.final_labels.astype(np.int64)
        self.n_capacity_growths_ = int(res.n_capacity_growths)
        self.capacity_ = int(res.capacity)
        self.n_overflow_redos_ = int(res.n_overflow_redos)
        self.n_features_in_ = np.asarray(X).shape[1]
        # the collapsed predictive of new points needs the components' items: a copy, so that the caller may
        # change its array after fit (a reference made predict_proba answer about data the model never saw)
        self._X = np.array(X, copy=True)
        self._X.setflags(write=False)
        diag = chain_diagnostics(
            {"log_joint": res.log_joint, "n_components": res.n_components, "alpha": res.alpha}
        )
        diag["traces"] = {
            "log_joint": res.trace_log_joint,
            "n_components": res.trace_n_components,
            "alpha": res.trace_alpha,
        }
        diag["n_components_samples"] = res.n_components.reshape(-1)
        diag["split_merge"] = split_merge_summary(res.split_merge)
        self.diagnostics_ = diag
        return self

    def _capacity(self):
        """``capacity``, or the deprecated ``max_components`` it replaces."""
        if self.max_components is None:
            return self.capacity
        warnings.warn(
            "DPMM(max_components=...) is deprecated: the setting is called capacity, as in jaxclust.dpmm.sample",
            FutureWarning,
            stacklevel=3,
        )
        if self.capacity is not None and self.capacity != self.max_components:
            raise InvalidInputError(
                f"capacity={self.capacity!r} and max_components={self.max_components!r}: max_components is the "
                "deprecated spelling of capacity; give one"
            )
        return check_rule(Int(1), self.max_components, "max_components")

    @property
    def coclustering_(self) -> np.ndarray:
        """(n, n) probability that two items share a component, over the retained samples (computed on first
        access: it is n x n; for large n use :func:`jaxclust.active.top_entropy_pairs` on ``samples_``)."""
        if "samples_" not in vars(self):
            raise NotFittedError("DPMM: call fit before reading coclustering_")
        if self._coclustering is None:
            self._coclustering = np.asarray(coclustering(self.samples_), dtype=np.float64)
        return self._coclustering

    def predict_proba(self, X) -> np.ndarray:
        """(m, K + 1): the probability that each row of ``X`` (m, D) joins each of the K clusters of
        ``labels_`` or, in the last column, a new cluster: the posterior predictive assignment of one more
        item, averaged over the retained samples (:mod:`jaxclust.dpmm.predictive`). Rows sum to 1. The
        training data's constraints do not apply to new points."""
        import warnings

        if "samples_" not in vars(self):
            raise NotFittedError("DPMM.predict_proba: call fit before predict_proba")
        X = check_array(X, name="X", min_rows=1)
        if X.shape[1] != self.n_features_in_:
            raise InvalidInputError(
                f"X has {X.shape[1]} features, but DPMM was fitted with {self.n_features_in_}"
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JaxclustWarning)  # constant columns were reported by fit
            prep = prepare_data(self._X, self.prior)
        X_new = X[:, prep.columns]
        if self.prior is None or self.prior.centred:
            shift, scale = location_scale(self._X[:, prep.columns])
            X_new = (X_new - shift) / scale
        return assignment_probabilities(
            prep.family, prep.X, X_new, self.samples_, self.alpha_samples_, self.labels_
        )

    def predict(self, X) -> np.ndarray:
        """(m,) the cluster of ``labels_`` each row of ``X`` most probably joins (``predict_proba`` without its
        new-cluster column)."""
        return np.argmax(self.predict_proba(X)[:, :-1], axis=1)

    def fit_predict(self, X, constraints=None, init_labels=None, n_burnin=None):
        """``fit`` and return ``labels_``."""
        return self.fit(X, constraints, init_labels=init_labels, n_burnin=n_burnin).labels_
