"""Constraints: closure by union-find, lifting to groups, conflicts named, padded partner lists, JSON."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxclust.constraints import Constraints
from jaxclust.errors import ConstraintConflictError, ConstraintError, InvalidInputError


def brute_status(n, ml, cl):
    """Closure by repeated relaxation over an n×n relation (independent of union-find)."""
    same = np.eye(n, dtype=bool)
    for i, j in ml:
        same[i, j] = same[j, i] = True
    for k in range(n):  # Warshall transitive closure
        same |= same[:, [k]] & same[[k], :]
    diff = np.zeros((n, n), dtype=bool)
    for i, j in cl:
        diff |= np.outer(same[i], same[j]) | np.outer(same[j], same[i])
    return same, diff


pairs = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=10)


@settings(max_examples=150, deadline=None)
@given(ml=pairs, cl=pairs)
def test_status_matches_brute_force_closure(ml, cl):
    n = 8
    cl = [(i, j) for i, j in cl if i != j]
    if any(i == j for i, j in ml):
        with pytest.raises(
            ConstraintError, match=r"^must-link \((\d), \1\): a must-link needs two different"
        ):
            Constraints(n, ml, cl)
        ml = [(i, j) for i, j in ml if i != j]
    same, diff = brute_status(n, ml, cl)
    if (same & diff).any():
        with pytest.raises(ConstraintConflictError) as info:
            Constraints(n, ml, cl)
        a, b = info.value.pair
        assert same[a, b] and (a, b) in {(i, j) for i, j in cl} | {(j, i) for i, j in cl}
        chain = info.value.chain
        assert chain[0][0] == a and chain[-1][1] == b  # a path of must-links from a to b
        given_ml = {frozenset(p) for p in ml}
        assert all(frozenset(e) in given_ml for e in chain)
        assert all(u[1] == v[0] for u, v in itertools.pairwise(chain))
        return
    c = Constraints(n, ml, cl)
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    codes = c.status_codes(ii, jj)
    np.testing.assert_array_equal(codes == 1, same)
    np.testing.assert_array_equal(codes == -1, diff)
    # groups are exactly the must-link components, numbered by first member
    np.testing.assert_array_equal(c.group_of[:, None] == c.group_of[None, :], same)
    firsts = [int(np.flatnonzero(c.group_of == g)[0]) for g in range(c.n_groups)]
    assert firsts == sorted(firsts)
    # partner table lists exactly the cannot-linked groups
    table = c.cannot_partners()
    for g in range(c.n_groups):
        partners = set(table[g][table[g] >= 0].tolist())
        members = np.flatnonzero(c.group_of == g)
        expect = {int(c.group_of[j]) for j in range(n) if diff[members[0], j]}
        assert partners == expect
    assert table.shape[1] >= max(c.max_degree, 1)
    assert table.shape[1] & (table.shape[1] - 1) == 0  # power of two
    # every labelling that satisfies the closure satisfies the constraints
    z = c.group_of.copy()
    assert c.check_assignment(z) == []


def test_status_and_groups_small():
    c = Constraints(6, must_link=[(0, 1), (1, 2)], cannot_link=[(2, 3), (4, 5)])
    assert c.status(0, 2) == "must"
    assert c.status(3, 0) == "cannot"  # lifted through the must-link group
    assert c.status(0, 4) is None
    assert c.group_of.tolist() == [0, 0, 0, 1, 2, 3]
    assert c.group_sizes.tolist() == [3, 1, 1, 1]
    assert c.cannot_link_groups.tolist() == [[0, 1], [2, 3]]
    assert [g.tolist() for g in c.groups] == [[0, 1, 2], [3], [4], [5]]
    assert len(c) == 4
    np.testing.assert_array_equal(c.cannot_partners(capacity=2, n_rows=6)[:, 0], [1, 0, 3, 2, -1, -1])
    with pytest.raises(InvalidInputError, match="capacity"):
        Constraints(4, cannot_link=[(0, 1), (0, 2), (0, 3)]).cannot_partners(capacity=2)


def test_conflict_message_names_pair_and_chain():
    with pytest.raises(ConstraintConflictError) as info:
        Constraints(5, must_link=[(0, 1), (1, 4), (4, 3)], cannot_link=[(0, 3)])
    msg = str(info.value)
    assert "0 and 3" in msg and "0 -> 1 -> 4 -> 3" in msg
    assert info.value.pair == (0, 3)
    assert info.value.chain == [(0, 1), (1, 4), (4, 3)]
    # adding a must-link that closes the chain also raises, whatever the order
    c = Constraints(5, must_link=[(0, 1), (3, 4)], cannot_link=[(1, 4)])
    with pytest.raises(ConstraintConflictError, match="1 and 4"):
        c.with_must_link(0, 3)
    with pytest.raises(ConstraintConflictError):
        Constraints(3, must_link=[(0, 1)]).with_cannot_link(1, 0)


def test_drop_policy_keeps_the_earliest():
    c = Constraints.from_pairs(
        5,
        [(0, 3, "cannot"), (0, 1, "must"), (1, 2, "must"), (2, 3, "must"), (3, 4, "must")],
        on_conflict="drop",
    )
    assert c.dropped == (((2, 3), "must"),)
    assert c.status(0, 3) == "cannot" and c.status(3, 4) == "must"
    c2 = c.with_cannot_link(0, 2)  # implied must -> dropped, not raised
    assert c2.dropped[-1] == ((0, 2), "cannot")
    assert c2 == c  # nothing kept changed


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(cannot_link=[(2, 2)]), "itself"),
        (dict(must_link=[(0, 5)]), "out of range"),
        (dict(must_link=[(-1, 2)]), "out of range"),
        (dict(cannot_link=[(0, 1.5)]), "not an integer"),
        (dict(must_link=[(0, "1")]), "not an integer"),
        (dict(must_link=[(0, 1, 2)]), "pair"),
    ],
)
def test_malformed_constraints_raise(kwargs, match):
    with pytest.raises(ConstraintError, match=match):
        Constraints(5, **kwargs)


def test_bad_n_and_policy():
    with pytest.raises(InvalidInputError):
        Constraints(0)
    with pytest.raises(InvalidInputError):
        Constraints(3, on_conflict="ignore")
    with pytest.raises(ConstraintError, match="out of range"):
        Constraints(3).status_codes([0], [3])


def test_from_labels_all_pairs():
    labels = np.array([4, 4, 7, 7, 9, 4])
    c = Constraints.from_labels(labels, [0, 2, 3, 5])
    assert c.n == 6
    expect = {
        (0, 5, "must"),
        (2, 3, "must"),
        (0, 2, "cannot"),
        (0, 3, "cannot"),
        (2, 5, "cannot"),
        (3, 5, "cannot"),
    }
    assert set(c.pairs) == expect
    assert c.status(1, 0) is None  # unlabelled item 1 gets nothing


def test_json_round_trip_and_equality():
    c = Constraints.from_pairs(7, [(0, 1, "must"), (2, 3, "cannot"), (1, 2, "must"), (5, 6, "cannot")])
    d = Constraints.from_json(c.to_json())
    assert d == c and d.pairs == c.pairs and hash(d) == hash(c)
    np.testing.assert_array_equal(d.group_of, c.group_of)
    assert Constraints(3) != Constraints(4)


def test_duplicates_are_kept_once_and_objects_are_immutable():
    c = Constraints(4, must_link=[(0, 1), (1, 0), (0, 1)])
    assert c.must_link == ((0, 1),)
    c2 = c.with_cannot_link(2, 3)
    assert len(c) == 1 and len(c2) == 2
    with pytest.raises(ValueError):
        c.group_of[0] = 3


# --- answers that may be wrong (soft constraints) ---------------------------------------------------------------
def _direct_answer_loglik(answers, z):
    return sum(
        np.log(1 - eps) if (z[i] == z[j]) == (kind == "must") else np.log(eps) for i, j, kind, eps in answers
    )


def test_soft_answers_lift_to_group_weights_and_match_the_likelihood():
    c = Constraints.from_answers(
        7,
        [
            (0, 1, "must"),  # hard: joins 0 and 1
            (2, 3, "cannot"),  # hard
            (1, 4, "must", 0.1),
            (0, 4, "cannot", 0.2),  # a second person, disagreeing (same groups: weights add)
            (2, 3, "must", 0.3),  # across a hard cannot-link: a constant
            (0, 1, "cannot", 0.1),  # inside a hard group: a constant
            (5, 6, "must", 0.5),  # uninformative: weight 0, dropped from the table
        ],
    )
    assert c.must_link == ((0, 1),) and c.cannot_link == ((2, 3),) and len(c.answers) == 5
    edges, weights = c.soft_link_groups
    assert edges.tolist() == [[0, 3]]  # groups: {0,1}=0, {2}=1, {3}=2, {4}=3, {5}=4, {6}=5
    np.testing.assert_allclose(weights, [np.log(0.9 / 0.1) - np.log(0.8 / 0.2)])
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(20):
        z = rng.integers(0, 3, 7)
        z[1] = z[0]
        z[3] = z[2] + 3  # satisfy the hard constraints
        assert c.log_answer_likelihood(z) == pytest.approx(_direct_answer_loglik(c.answers, z))
        rows.append(z)
    want = [_direct_answer_loglik(c.answers, z) for z in rows]  # many labellings at once: one value each
    np.testing.assert_allclose(c.log_answer_likelihood(np.array(rows)), want, rtol=1e-12)
    partners, w = c.partner_table(4, n_rows=7)
    assert partners[0].tolist() == [3, -1, -1, -1] and partners[1].tolist() == [2, -1, -1, -1]
    assert np.isneginf(w[1, 0]) and w[0, 0] == pytest.approx(weights[0])
    assert c.check_assignment(np.array([0, 0, 1, 1, 0, 0, 0])) == [(2, 3, "cannot")]  # answers never violate
    assert Constraints.from_dict(c.to_dict()) == c and Constraints.from_json(c.to_json()) == c
    # every colour class is free of cannot-links and answers
    colour, k = c.colouring()
    assert k >= 2 and colour[0] != colour[3] and colour[1] != colour[2]


def test_error_rate_zero_is_a_hard_constraint_and_bad_rates_are_named():
    hard = Constraints(4, must_link=[(0, 1)], cannot_link=[(1, 2)])
    assert Constraints.from_answers(4, [(0, 1, "must", 0.0), (1, 2, "cannot", 0)]) == hard
    assert Constraints(4).with_answer(0, 1, True).with_answer(1, 2, False) == hard
    soft = Constraints(4, must_link=[(0, 1)], cannot_link=[(0, 1)], error_rate=0.2)  # conflicting: both kept
    assert len(soft.answers) == 2 and soft.must_link == () and soft.soft_link_groups[0].shape == (0, 2)
    for bad in (-0.1, 0.6, float("nan"), "x"):
        with pytest.raises(ConstraintError, match="error_rate"):
            Constraints(4, must_link=[(0, 1)], error_rate=bad)
    with pytest.raises(ConstraintError, match=r"answer \(0, 1, 'must', 0.7\) error_rate"):
        Constraints.from_answers(4, [(0, 1, "must", 0.7)])
    with pytest.raises(ConstraintError, match=r"must answer \(2, 2\)"):
        Constraints(4).with_answer(2, 2, True, 0.1)


@pytest.mark.parametrize("seed", range(8))
def test_adding_answers_one_at_a_time_gives_the_set_built_at_once(seed):
    """with_constraint / with_answer update the groups and cannot-link edges in place of a rebuild: every view
    must equal the set built from the whole sequence (duplicates, contradictions dropped, soft answers lifted to
    the groups as they grow)."""
    rng = np.random.default_rng(seed)
    n = 12
    seq = []
    for _ in range(60):
        i, j = rng.choice(n, 2, replace=False).tolist()
        kind = "must" if rng.random() < 0.5 else "cannot"
        seq.append((i, j, kind) if rng.random() < 0.8 else (i, j, kind, float(rng.choice([0.1, 0.3]))))
    seq += [seq[3][:3], (seq[5][1], seq[5][0], seq[5][2])]  # exact and reversed duplicates
    one = Constraints.from_answers(n, (), on_conflict="drop")
    for step, item in enumerate(seq, 1):
        one = one.with_answer(*item) if len(item) == 4 else one.with_constraint(*item)
        whole = Constraints.from_answers(n, seq[:step], on_conflict="drop")
        assert one.pairs == whole.pairs and one.dropped == whole.dropped and one.answers == whole.answers
        assert np.array_equal(one.group_of, whole.group_of)
        assert np.array_equal(one.cannot_link_groups, whole.cannot_link_groups)
        a, b = np.triu_indices(n, 1)
        assert np.array_equal(one.status_codes(a, b), whole.status_codes(a, b))
        for x, y in zip(one.soft_link_groups, whole.soft_link_groups, strict=True):
            assert np.array_equal(x, y)
        assert one.log_answer_constant == whole.log_answer_constant
    assert one.dropped and one.answers and len(one.groups) == one.n_groups


def test_a_contradicting_constraint_still_raises_with_its_chain_when_added_one_at_a_time():
    c = Constraints(4, must_link=[(0, 1), (1, 2)], cannot_link=[(2, 3)])
    with pytest.raises(ConstraintConflictError, match=r"chain 0 -> 1 -> 2"):
        c.with_cannot_link(0, 2)
    with pytest.raises(ConstraintConflictError):
        c.with_must_link(0, 3)
    with pytest.raises(ConstraintError, match="cannot be cannot-linked to itself"):
        c.with_cannot_link(3, 3)


def _random_answers(n: int, n_answers: int, seed: int) -> Constraints:
    """Random hard and soft answers on ``n`` items, a few hubs among them."""
    rng = np.random.default_rng(seed)
    answers = []
    for _ in range(n_answers):
        i = int(rng.integers(0, 3)) if rng.random() < 0.5 else int(rng.integers(0, n))  # items 0-2 are hubs
        j = int(rng.integers(0, n))
        if i != j:
            eps = [0.0, 0.1, 0.3][rng.integers(0, 3)]
            answers.append((i, j, "must" if rng.random() < 0.2 else "cannot", eps))
    return Constraints.from_answers(n, answers, on_conflict="drop")


@pytest.mark.parametrize("width", [1, 2, 3, 8])
@pytest.mark.parametrize("seed", range(4))
def test_partner_rows_hold_each_groups_partners_as_the_wide_table(width, seed):
    c = _random_answers(30, 60, seed)
    partners, weights = c.partner_table(n_rows=30)
    t = c.partner_rows(width, n_rows=30)
    assert t.partners.shape == (30, width) and t.spill.shape[0] >= 32 and t.spill.shape[1] == width
    for g in range(30):
        first, count = t.spill_span[g]
        assert (t.spill_owner[first : first + count] == g).all()
        got = np.concatenate([t.partners[g], t.spill[first : first + count].ravel()])
        got_w = np.concatenate([t.weights[g], t.spill_weights[first : first + count].ravel()])
        want, want_w = partners[g][partners[g] >= 0], weights[g][partners[g] >= 0]
        assert got[got >= 0].tolist() == want.tolist()  # the same partners, in the same increasing order
        np.testing.assert_array_equal(got_w[got >= 0], want_w)
        assert count == max(0, -(-(len(want) - width) // width))
    assert (t.spill_owner >= 0).sum() == t.spill_span[:, 1].sum()
    assert (t.spill[t.spill_owner < 0] == -1).all()
    with pytest.raises(InvalidInputError, match="spill_rows"):
        c.partner_rows(1, n_rows=30, spill_rows=0)
