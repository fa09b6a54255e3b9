"""Sampled partitions: relabelling by first appearance, and co-clustering as the fraction of samples."""

from __future__ import annotations

import numpy as np
import pytest

from jaxclust.coclustering import coclustering, least_squares_sample, relabel


def test_relabel_numbers_labels_by_first_appearance_row_by_row():
    np.testing.assert_array_equal(relabel([5, 5, -1, 2, -1]), [0, 0, 1, 2, 1])
    np.testing.assert_array_equal(relabel(np.array([[3, 1, 3], [0, 0, 2]])), [[0, 1, 0], [0, 0, 1]])
    rng = np.random.default_rng(0)
    z = rng.integers(0, 6, (4, 30))
    perm = rng.permutation(6) * 1000 - 7  # the same partitions under other (and negative) labels
    np.testing.assert_array_equal(relabel(perm[z]), relabel(z))
    # each row in a range of its own (10**12 apart): still one partition per row, numbered within the row
    np.testing.assert_array_equal(relabel(z + 10**12 * np.arange(4)[:, None]), relabel(z))
    for row, out in zip(z, relabel(z), strict=True):  # the same partition, first labels 0, 1, 2, ... in order
        assert np.array_equal(row[:, None] == row[None, :], out[:, None] == out[None, :])
        firsts = out[np.sort(np.unique(out, return_index=True)[1])]
        np.testing.assert_array_equal(firsts, np.arange(len(firsts)))


def test_coclustering_is_the_fraction_of_samples_that_join_a_pair():
    z = np.array([[0, 0, 1], [0, 1, 1], [2, 2, 2], [0, 1, 0]])
    want = np.mean(z[:, :, None] == z[:, None, :], axis=0)
    np.testing.assert_allclose(np.asarray(coclustering(z)), want, rtol=0, atol=1e-7)


@pytest.mark.parametrize("seed", range(5))
def test_least_squares_sample_minimises_the_summed_binder_loss_by_enumeration(seed):
    """The chosen row has the least sum over the other rows of the number of item pairs on which the two
    partitions disagree (together in one, apart in the other), counted pair by pair; ties go to the first."""
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, 3, size=(7, 9)) * rng.choice([1, 10], size=(7, 1))  # labels in any numbering
    samples[5] = samples[2]  # a tie in partition: the first of the two can win, never the second
    same = samples[:, :, None] == samples[:, None, :]
    iu = np.triu_indices(9, 1)
    loss = np.array([sum(int((same[s][iu] != same[t][iu]).sum()) for t in range(7)) for s in range(7)])
    assert least_squares_sample(samples) == int(np.argmin(loss)) != 5
    assert least_squares_sample(samples[:1]) == 0
