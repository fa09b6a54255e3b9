"""How many component slots the chains get: the driver's policy, apart from the kernel.

A state has a fixed number of slots ``K`` (a compiled shape). A kernel that would need one more reports
``overflow`` in its info (:class:`jaxclust.dpmm.state.MoveInfo`) instead of truncating; the driver
(:func:`jaxclust.dpmm.chains.run_chains`) then grows the slots and redoes the block of iterations from its start
with the same keys, so no retained sample comes from a truncated sampler. Growing costs a compile, so the slots
start roomy and also grow ahead of need, when a block leaves fewer than :func:`headroom` of them free. While the
components are still multiplying (the first blocks after the one-component start, when split-merge splits most of
them every iteration), a growth makes room for one more block at the rate of the last one (``GROWTH`` squared
when ``GROWTH`` would not), so that a fit that ends with many components compiles once or twice rather than at
every doubling. A warm start begins at the capacity that growth from ``MIN_SLOTS`` (or the requested slots)
would reach, so that the refits of a session run at one or two compiled shapes.

Usage::

    policy = SlotPolicy(initial_capacity(n_used, n_rows, capacity), n_groups, n_rows)
    new = policy.after_overflow()                         # grow and redo the block
    new = policy.after_block(occupied, last, before)      # None: keep the slots
"""

from __future__ import annotations

import math

__all__ = ["SlotPolicy", "initial_capacity", "grown_capacity", "headroom", "MIN_SLOTS"]

# Default starting slots: every chain starts in one component and split-merge creates several per round, so
# start roomy (one compile serves up to ~24 components) rather than grow (each growth re-compiles).
MIN_SLOTS = 32
# Free slots kept beyond the largest occupied count: a quarter of the capacity, at least 2.
HEADROOM = 2
# Capacities are multiples of this (fewer distinct compiled shapes) and grow by GROWTH.
SLOT_STEP = 4
GROWTH = 2.0


def headroom(capacity: int) -> int:
    """Free slots a block should leave: a quarter of ``capacity``, at least ``HEADROOM``."""
    return max(HEADROOM, int(capacity) // 4)


def _round_slots(k: int) -> int:
    return SLOT_STEP * -(-int(k) // SLOT_STEP)


def initial_capacity(max_occupied: int, n_groups: int, capacity: int | None = None) -> int:
    """Starting slots: ``capacity`` (default ``MIN_SLOTS``), doubled until ``max_occupied`` components leave the
    :func:`headroom` free, and at most ``n_groups`` (enough for any partition; never below ``max_occupied``).
    A warm start thus begins at a capacity that a growth from ``capacity`` would also reach, with room to
    run: the refits of a session compile a few shapes, not one per number of components. Callers pass the
    number of group *rows* (the items, a constant of the data) as ``n_groups`` so that must-links joining
    groups between fits do not change the compiled shapes."""
    want = int(capacity or MIN_SLOTS)
    while want - headroom(want) < max_occupied and want < n_groups:
        want = _round_slots(math.ceil(GROWTH * want))
    return max(int(max_occupied), 1, min(want, int(n_groups)))


def grown_capacity(capacity: int, max_occupied: int, n_groups: int, expected: float | None = None) -> int:
    """Next capacity: x``GROWTH`` and at least ``max_occupied + HEADROOM``, a multiple of ``SLOT_STEP``, capped at
    ``n_groups``. ``expected``: components the next block may reach; when x``GROWTH`` would not leave them the
    headroom, x``GROWTH`` squared."""
    want = max(_round_slots(math.ceil(GROWTH * capacity)), _round_slots(int(max_occupied) + HEADROOM))
    if expected is not None and want - headroom(want) < expected:
        want = max(want, _round_slots(math.ceil(GROWTH * GROWTH * capacity)))
    return min(want, max(int(n_groups), capacity))


class SlotPolicy:
    """The slots of one run of chains: ``capacity`` now, and how many times it grew (``growths``) and a block was
    redone after an overflow (``redos``). ``n_groups``: must-link groups (a partition never needs more slots);
    ``n_rows``: group rows, the cap of a growth."""

    def __init__(self, capacity: int, n_groups: int, n_rows: int):
        self.capacity, self.n_groups, self.n_rows = int(capacity), int(n_groups), int(n_rows)
        self.growths = self.redos = 0

    def _grow(self, occupied: int, expected: float | None = None) -> int:
        self.capacity = grown_capacity(self.capacity, occupied, self.n_rows, expected)
        self.growths += 1
        return self.capacity

    def after_overflow(self) -> int:
        """The capacity to redo a block with, after a chain lacked a slot."""
        if self.capacity >= self.n_groups:  # cannot happen (a partition fits); never loop forever
            raise RuntimeError(
                f"DPMM sampler overflowed with {self.capacity} slots for {self.n_groups} groups"
            )
        self.redos += 1
        return self._grow(self.capacity)

    def after_block(self, occupied: int, last: bool, before: int | None = None) -> int | None:
        """The capacity for the next block when a block that ended with ``occupied`` components (at most, over the
        chains) left less than the headroom, else None; None after the ``last`` block. ``before``: the
        components the block started from; when they multiplied, the next block is expected to multiply them by
        as much again."""
        if occupied + headroom(self.capacity) > self.capacity and self.capacity < self.n_groups and not last:
            growing = before is not None and 0 < before < occupied
            return self._grow(occupied, occupied * occupied / before if growing else None)
        return None
