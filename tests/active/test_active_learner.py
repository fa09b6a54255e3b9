"""ActiveLearner against a fake model with a known sample distribution and a NumPy reference loop."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle, NoisyOracle, score_samples
from jaxclust.constraints import Constraints
from jaxclust.errors import InvalidInputError

GOLD = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3, 3])
N, S = len(GOLD), 24
X = np.arange(N, dtype=float)[:, None] * np.ones((1, 2))


def _partitions(seed=0, count=40):
    rng = np.random.default_rng(seed)
    parts = [GOLD.copy()]
    for _ in range(count - 1):
        z = GOLD.copy()
        flip = rng.random(N) < 0.35
        z[flip] = rng.integers(0, 5, flip.sum())
        parts.append(z)
    return np.array(parts)


PARTS = _partitions()


def _consistent(cons):
    ok = np.array(
        [p for p in PARTS if not cons.check_assignment(p)] or [cons.group_of]
    )  # groups always satisfy
    return ok[np.arange(S) % len(ok)]  # fixed S: one compile for the whole file


class FakeModel:
    """'Posterior' = the partitions in PARTS that satisfy the constraints (GOLD always does)."""

    def __init__(self, n_burnin=50):
        self.n_burnin = n_burnin
        self.fits = []

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None):
        self.samples_ = _consistent(constraints)
        self.final_labels_ = self.samples_[:2]
        self.fits.append({"n": len(constraints), "warm": init_labels is not None, "n_burnin": n_burnin})
        return self


def _entropy(z, w):
    p = np.tensordot(w, (z[:, :, None] == z[:, None, :]).astype(float), axes=1) / w.sum()
    q = np.minimum(p, 1 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nan_to_num(-(q * np.log(q)) - (1 - q) * np.log(1 - q)).astype(np.float32)


def _best(z, w, cons, exclude=()):
    h = _entropy(z, w)
    i, j = np.triu_indices(N, 1)
    ok = ~cons.is_known(i, j) & np.array([(a, b) not in exclude for a, b in zip(i, j, strict=True)])
    i, j, hv = i[ok], j[ok], h[i[ok], j[ok]]
    order = np.lexsort((j, i, -hv))
    return [(int(i[t]), int(j[t])) for t in order]


def _answer(i, j):
    return "must" if GOLD[i] == GOLD[j] else "cannot"


def test_entropy_strategy_follows_the_reference_loop():
    learner = ActiveLearner(
        FakeModel(), GoldOracle(GOLD), strategy="entropy", batch_size=1, progress=False, propagation="pairs"
    )
    hist = learner.run(X, 6, eval_labels=GOLD)
    cons, want = Constraints(N), []
    for _ in range(6):
        i, j = _best(_consistent(cons), np.ones(S), cons)[0]
        want.append([i, j, _answer(i, j)])
        cons = cons.with_constraint(i, j, GOLD[i] == GOLD[j])
    assert [q for h in hist[1:] for q in h["queries"]] == want
    assert [h["n_constraints"] for h in hist] == list(range(7))
    assert learner.constraints_ == cons
    assert set(hist[0]) >= {
        "n_constraints",
        "v_beta",
        "v_measure",
        "homogeneity",
        "completeness",
        "vi",
        "link_accuracy",
    }
    last = hist[-1]
    assert last["v_beta"] == pytest.approx(score_samples(_consistent(cons), GOLD)["v_beta"])


def test_batch_strategy_filters_samples_and_resamples_below_min_samples():
    model = FakeModel()
    learner = ActiveLearner(
        model, GoldOracle(GOLD), strategy="batch", batch_size=5, min_samples=8, progress=False
    )
    hist = learner.run(X, 5)
    # reference: pick, answer, keep only agreeing samples, redraw (new fit) when fewer than 8 remain
    cons = Constraints(N)
    z, w, want, refits = _consistent(cons), np.ones(S), [], 0
    for b in range(5):
        if b > 0 and w.sum() < 8:
            z, w, refits = _consistent(cons), np.ones(S), refits + 1
        i, j = _best(z, w, cons)[0]
        ans = _answer(i, j)
        want.append([i, j, ans])
        cons = cons.with_constraint(i, j, ans == "must")
        w = w * ((z[:, i] == z[:, j]) == (ans == "must"))
    assert hist[1]["queries"] == want
    assert len(model.fits) == 0  # the learner works on a clone
    assert learner.model_.fits[-1]["n"] == 5 and len(learner.model_.fits) == 1 + refits + 1
    assert hist[1]["n_refits"] == refits + 1


def test_naive_batch_takes_top_b_and_skips_pairs_implied_within_the_batch():
    learner = ActiveLearner(
        FakeModel(), GoldOracle(GOLD), strategy="naive_batch", batch_size=6, progress=False
    )
    hist = learner.run(X, 6)
    top = _best(_consistent(Constraints(N)), np.ones(S), Constraints(N))[:6]
    asked = [(i, j) for i, j, _ in hist[1]["queries"]]
    cons = Constraints(N)
    expected = []
    for i, j in top:
        if cons.status(i, j) is None:
            expected.append((i, j))
            cons = cons.with_constraint(i, j, GOLD[i] == GOLD[j])
    assert asked == expected


def test_warm_start_passes_previous_state_and_short_burnin():
    learner = ActiveLearner(
        FakeModel(n_burnin=100), GoldOracle(GOLD), strategy="entropy", warm_burnin=7, progress=False
    )
    learner.run(X, 3)
    fits = learner.model_.fits
    assert fits[0] == {"n": 0, "warm": False, "n_burnin": None}
    assert all(f["warm"] and f["n_burnin"] == 7 for f in fits[1:])
    cold = ActiveLearner(FakeModel(), GoldOracle(GOLD), strategy="entropy", warm_start=False, progress=False)
    cold.run(X, 2)
    assert not any(f["warm"] for f in cold.model_.fits)


class ThinModel(FakeModel):
    """A model whose fit takes ``thin``: the session sets it on warm refits."""

    def fit(self, X, constraints=None, init_labels=None, n_burnin=None, thin=None):
        super().fit(X, constraints, init_labels, n_burnin)
        self.fits[-1]["thin"] = thin
        return self


@pytest.mark.parametrize("warm_thin", [None, 3])
def test_warm_refits_take_the_sessions_thin(warm_thin):
    kw = {} if warm_thin is None else {"warm_thin": warm_thin}
    learner = ActiveLearner(ThinModel(), GoldOracle(GOLD), strategy="entropy", progress=False, **kw)
    learner.run(X, 3)
    fits = learner.model_.fits
    assert fits[0]["thin"] is None  # the first fit is the model's own
    assert [f["thin"] for f in fits[1:]] == [warm_thin or 1] * (len(fits) - 1)
    # a model whose fit takes no thin is refitted as before (FakeModel above), and a bad thin is named
    with pytest.raises(InvalidInputError, match="warm_thin"):
        ActiveLearner(ThinModel(), GoldOracle(GOLD), warm_thin=0, progress=False).run(X, 1)


def test_dont_know_pairs_are_never_asked_again():
    asked = []

    def oracle(i, j):
        asked.append((i, j))
        return "unknown" if len(asked) % 2 else _answer(i, j)

    learner = ActiveLearner(FakeModel(), oracle, strategy="entropy", progress=False)
    hist = learner.run(X, 8)
    assert len(asked) == len(set(asked)) == 8
    assert learner.unknown_ == sorted(asked[0::2])
    assert hist[-1]["n_unknown"] == 4 and hist[-1]["n_constraints"] == 4


def test_random_strategy_asks_unknown_pairs_reproducibly():
    runs = [
        ActiveLearner(
            FakeModel(), GoldOracle(GOLD), strategy="random", batch_size=3, random_state=5, progress=False
        ).run(X, 9)
        for _ in range(2)
    ]
    qs = [[tuple(q[:2]) for h in hist for q in h["queries"]] for hist in runs]
    assert qs[0] == qs[1] and len(set(qs[0])) == len(qs[0])
    cons = Constraints(N)
    for i, j in qs[0]:
        assert cons.status(i, j) is None
        cons = cons.with_constraint(i, j, GOLD[i] == GOLD[j])


def test_resume_from_store_asks_only_new_questions(tmp_path):
    store = tmp_path / "answers.jsonl"
    full = ActiveLearner(FakeModel(), GoldOracle(GOLD), strategy="entropy", progress=False).run(X, 6)
    ActiveLearner(FakeModel(), GoldOracle(GOLD), strategy="entropy", store=store, progress=False).run(X, 3)
    asked = []

    def oracle(i, j):
        asked.append([i, j, _answer(i, j)])
        return _answer(i, j)

    resumed = ActiveLearner(FakeModel(), oracle, strategy="entropy", store=store, progress=False).run(X, 6)
    want = [q for h in full[1:] for q in h["queries"]]
    assert resumed[0]["queries"] == want[:3]  # replayed, not asked
    assert asked == want[3:]
    assert [(r["i"], r["j"], r["answer"]) for r in AnswerStore(store).records] == [tuple(q) for q in want]
    with pytest.raises(InvalidInputError, match="fingerprint"):
        ActiveLearner(FakeModel(), oracle, store=store, progress=False).run(X + 1, 1)


def test_contradictory_answers_are_dropped_and_reported_not_raised(tmp_path):
    path = tmp_path / "noisy.sqlite"
    with AnswerStore(path) as store:  # a person contradicted themselves in an earlier session
        store.append(0, 1, "must")
        store.append(1, 2, "must")
        store.append(0, 2, "cannot")
    learner = ActiveLearner(
        FakeModel(),
        NoisyOracle(GOLD, 0.3, random_state=1),
        strategy="naive_batch",
        batch_size=4,
        store=path,
        progress=False,
    )
    hist = learner.run(X, 11)
    assert learner.dropped_ == [(0, 2, "cannot")]
    assert hist[0]["dropped"] == [[0, 2, "cannot"]] and hist[-1]["n_dropped"] == 1
    assert learner.constraints_.status(0, 2) == "must"
    assert [r["kept"] for r in AnswerStore(path).records][:3] == [True, True, True]  # as stored then
    assert len(AnswerStore(path).records) == 11


def test_score_samples_matches_scikit_learn():
    z = PARTS[:5]
    got = score_samples(z, GOLD)
    rows = []
    for p in z:
        h, c, v = skm.homogeneity_completeness_v_measure(GOLD, p)
        beta = len(np.unique(p)) / len(np.unique(GOLD))
        vi = (
            skm.mutual_info_score(GOLD, GOLD)
            + skm.mutual_info_score(p, p)
            - 2 * skm.mutual_info_score(GOLD, p)
        )
        rows.append(
            [
                skm.v_measure_score(GOLD, p, beta=beta),
                v,
                h,
                c,
                vi,
                skm.rand_score(GOLD, p),
                skm.adjusted_rand_score(GOLD, p),
            ]
        )
    want = np.mean(rows, axis=0)
    keys = ["v_beta", "v_measure", "homogeneity", "completeness", "vi", "link_accuracy", "ari"]
    np.testing.assert_allclose([got[k] for k in keys], want, rtol=1e-10)


def test_bad_arguments_raise_named_errors():
    with pytest.raises(InvalidInputError, match="strategy"):
        ActiveLearner(FakeModel(), GoldOracle(GOLD), strategy="greedy").run(X, 1)
    with pytest.raises(InvalidInputError, match="batch_size"):
        ActiveLearner(FakeModel(), GoldOracle(GOLD), batch_size=0).run(X, 1)
    with pytest.raises(InvalidInputError, match="eval_labels"):
        ActiveLearner(FakeModel(), GoldOracle(GOLD), progress=False).run(X, 1, eval_labels=GOLD[:3])
    with pytest.raises(InvalidInputError, match="X"):
        ActiveLearner(FakeModel(), GoldOracle(GOLD), progress=False).run(np.full((3, 2), np.nan), 1)
