"""Training L3M scorers with optax: one jitted step (grad + update) over a padded batch of documents.

* :func:`train_step` -- mini-batch of documents (vmapped inside :func:`~jaxclust.l3m.loss.batch_loss`);
  for a plain :class:`~jaxclust.l3m.model.LinearScorer` the default (chunked) step uses the closed-form
  gradient :func:`~jaxclust.l3m.loss.linear_value_and_grad`, other scorers ``jax.value_and_grad``.
* :func:`online_epoch` -- the seed's per-item SGD: one optimizer update per item, a ``lax.scan`` over
  documents and items inside one jit.
* :func:`fit_scorer` -- host loop over epochs (tqdm bar), shuffled batches, early stopping on a dev set.

``gamma``, ``l2`` and the constraint weight are traced arrays, so a sweep over them reuses one compiled step.
The
optimizer enters the jitted functions through its ``update`` function (static); :func:`make_optimizer` caches
the
built-in ones so repeated fits with the same settings do not recompile.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxclust.errors import InvalidInputError
from jaxclust.l3m.document import pad_batch
from jaxclust.l3m.loss import (
    batch_loss,
    document_losses,
    item_loss,
    item_weights,
    linear_sums,
    linear_value_and_grad,
    link_logits,
)
from jaxclust.l3m.model import LinearScorer

__all__ = [
    "make_optimizer",
    "auto_chunk",
    "closed_form",
    "train_step",
    "shard_batch",
    "online_epoch",
    "eval_loss",
    "make_batches",
    "fit_scorer",
]


@functools.lru_cache(maxsize=32)
def _builtin_optimizer(name: str, learning_rate: float, decay_steps: float):
    if name == "sgd":
        # eta_t = eta_0 / (1 + t / tau): the classic decreasing SGD step (Bottou), as the seed's SGD suggests
        def schedule(count):
            return learning_rate / (1.0 + count / decay_steps)

        return optax.sgd(schedule)
    if name == "adam":
        return optax.adam(learning_rate)
    raise InvalidInputError(
        f"optimizer must be None, 'sgd', 'adam' or an optax GradientTransformation, got {name!r}"
    )


def make_optimizer(optimizer=None, learning_rate: float = 0.1, decay_steps: float = 100.0):
    """An optax GradientTransformation: ``None``/``"sgd"`` (inverse-time decay), ``"adam"``, or one given as
    is."""
    if optimizer is None or isinstance(optimizer, str):
        return _builtin_optimizer(optimizer or "sgd", float(learning_rate), float(decay_steps))
    if not isinstance(optimizer, optax.GradientTransformation):
        raise InvalidInputError(
            f"optimizer must be None, 'sgd', 'adam' or an optax GradientTransformation, got "
            f"{type(optimizer).__name__}"
        )
    return optimizer


def _params(scorer):
    return eqx.partition(scorer, eqx.is_inexact_array)


def closed_form(scorer) -> bool:
    """Whether :func:`train_step` uses the closed-form gradient (plain :class:`LinearScorer` only: a subclass
    may override the score or the penalty, so it goes through autodiff)."""
    return type(scorer) is LinearScorer


def _chunked_value_and_grad(params, static, batch, gamma, l2, weight, chunk):
    """Value and gradient of :func:`batch_loss`, accumulated over blocks of ``chunk`` items.

    Items are independent given the parameters, so the sum of block gradients is exact. Each block's forward
    and
    backward pass touch the same few MB of features, which keeps them in cache on a CPU (the whole-batch pass
    streams the feature tensor from memory twice).
    """
    loss, grads = _chunked_sums(params, static, batch, gamma, weight, item_weights(batch, weight), chunk)
    pen, pen_grad = jax.value_and_grad(lambda p: l2 * eqx.combine(p, static).l2_penalty())(params)
    return loss + pen, jax.tree.map(jnp.add, grads, pen_grad)


def _chunked_sums(params, static, batch, gamma, weight, wts, chunk):
    """Data part of :func:`_chunked_value_and_grad` (no penalty) with the item weights ``wts (B, M)`` given
    (those of the whole batch when ``batch`` is one device's share of its documents)."""
    fields = (batch.features, batch.cand, batch.gold, batch.gold_new, batch.item, batch.codes, wts)

    def body(c, acc):
        block = [jax.lax.dynamic_slice_in_dim(x, c * chunk, chunk, axis=1) for x in fields]

        def objective(p):
            losses, _ = jax.vmap(document_losses, in_axes=(None, 0, 0, 0, 0, 0, 0, None, None))(
                eqx.combine(p, static), *block[:6], gamma, weight
            )
            return jnp.sum(losses * block[6])

        val, grad = jax.value_and_grad(objective)(params)
        return jax.tree.map(jnp.add, acc, (val, grad))

    zero = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, params))
    return jax.lax.fori_loop(0, batch.cand.shape[1] // chunk, body, zero)


def _mesh():
    """All devices on one axis ``"docs"``: ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` gives N CPU
    devices, each run by its own thread (one XLA CPU device uses one core for this step)."""
    return jax.sharding.Mesh(np.array(jax.devices()), ("docs",))


def shard_batch(batch):
    """Pad ``batch`` to a multiple of the device count with empty documents and place its documents across
    the devices, as :func:`train_step` splits them (no copy per step). Single device: ``batch`` unchanged."""
    n_dev = jax.device_count()
    if n_dev < 2:
        return batch
    sharding = jax.sharding.NamedSharding(_mesh(), jax.sharding.PartitionSpec("docs"))
    return jax.device_put(_pad_docs(batch, n_dev, np), sharding)


def _pad_docs(batch, n_dev, xp):
    """Append empty documents (no items: weight 0 in the loss, as :func:`pad_batch` pads) up to a multiple of
    ``n_dev``."""
    extra = -batch.cand.shape[0] % n_dev
    if not extra:
        return batch

    def pad(name, v):
        fill = xp.ones if name == "gold_new" else xp.zeros  # pad_batch's values for empty slots
        return xp.concatenate([v, fill((extra, *v.shape[1:]), v.dtype)])

    return type(batch)(*(pad(k, v) for k, v in zip(batch._fields, batch, strict=True)))


def _sharded_value_and_grad(params, static, batch, gamma, l2, weight, chunk, linear):
    """:func:`train_step`'s loss and gradient with the documents split over all devices.

    Item weights ``1 / (m_d D)`` are computed on the whole batch first, so the per-device sums of weighted
    item terms add up (``psum``) to exactly the batch objective; the penalty is added once, after the sum.
    """
    n_dev = jax.device_count()
    batch = _pad_docs(batch, n_dev, jnp)  # empty documents have weight 0
    wts = item_weights(batch, weight)
    docs, rep = jax.sharding.PartitionSpec("docs"), jax.sharding.PartitionSpec()

    def local(params, batch, wts, gamma, weight):
        if linear:
            loss, gw, gd = linear_sums(params.weight, params.dummy, batch, gamma, weight, wts, chunk)
            grads = eqx.tree_at(lambda p: (p.weight, p.dummy), params, (gw, gd))
        else:
            loss, grads = _chunked_sums(params, static, batch, gamma, weight, wts, chunk)
        return jax.lax.psum((loss, grads), "docs")

    # check_vma=False: the block loops start from replicated zeros and accumulate per-device values, which
    # the varying-axis checker rejects; the psum makes every output replicated, as out_specs says
    loss, grads = jax.shard_map(
        local, mesh=_mesh(), in_specs=(rep, docs, docs, rep, rep), out_specs=rep, check_vma=False
    )(params, batch, wts, gamma, weight)
    pen, pen_grad = jax.value_and_grad(lambda p: l2 * eqx.combine(p, static).l2_penalty())(params)
    return loss + pen, jax.tree.map(jnp.add, grads, pen_grad)


@eqx.filter_jit
def train_step(
    scorer, opt_state, batch, gamma, l2, weight, update_fn, chunk=None, autodiff=False, shard=None
):
    """One optimizer step on a DocBatch; returns ``(scorer, opt_state, loss)``.

    ``chunk`` (static int dividing the padded item count ``M``, or ``>= M``): accumulate the gradient over
    blocks of items (same result, faster on CPU for large batches); ``None`` differentiates the whole batch at
    once. With a ``chunk``, a plain :class:`LinearScorer` takes the closed-form gradient
    (:func:`~jaxclust.l3m.loss.linear_value_and_grad`, blocks of ``chunk`` items) unless ``autodiff=True``;
    other scorers take ``jax.value_and_grad`` over blocks of ``chunk`` items of every document at once (see
    :func:`auto_chunk` for the block sizes that suit each path).

    ``shard`` (static): split the documents over all devices (``jax.devices()``), each device summing its
    share of the loss and gradient in blocks of ``chunk`` items (closed form or autodiff, as above), then one
    replicated update; the batch is padded with empty documents to a multiple of the device count (pass it
    through :func:`shard_batch` once to avoid that copy and the resharding per step). ``None``: shard when
    there are several devices and a ``chunk`` is given. With one device the step is unchanged.
    """
    params, static = _params(scorer)
    n_items = batch.cand.shape[1]
    if chunk is not None and (chunk < 1 or (chunk < n_items and n_items % chunk)):
        # a block straddling the end would silently drop the last items
        raise InvalidInputError(
            f"chunk must be a positive divisor of the padded item count {n_items} (or >= it), got {chunk}"
        )
    if shard is None:
        shard = chunk is not None and jax.device_count() > 1
    if shard and chunk is None:
        raise InvalidInputError("shard=True needs a chunk (the sharded step accumulates blocks of items)")
    if shard and jax.device_count() > 1:
        linear = closed_form(scorer) and not autodiff
        loss, grads = _sharded_value_and_grad(
            params, static, batch, gamma, l2, weight, min(chunk, n_items), linear
        )
    elif chunk is not None and closed_form(scorer) and not autodiff:
        loss, gw, gd = linear_value_and_grad(
            params.weight, params.dummy, batch, gamma, l2, weight, min(chunk, n_items)
        )
        grads = eqx.tree_at(lambda p: (p.weight, p.dummy), params, (gw, gd))
    elif chunk is None or chunk >= n_items:

        def objective(p):
            return batch_loss(eqx.combine(p, static), batch, gamma, l2, weight)

        loss, grads = jax.value_and_grad(objective)(params)
    else:
        loss, grads = _chunked_value_and_grad(params, static, batch, gamma, l2, weight, chunk)
    updates, opt_state = update_fn(grads, opt_state, params)
    return eqx.combine(optax.apply_updates(params, updates), static), opt_state, loss


@eqx.filter_jit
def online_epoch(scorer, opt_state, batch, gamma, l2, weight, update_fn):
    """Per-item SGD over every item of every document of a DocBatch, in order: ``w -= eta (l2 w + grad l_i)``.

    Returns ``(scorer, opt_state, mean item loss)``.
    """
    params, static = _params(scorer)
    gold_full = jnp.concatenate([batch.gold_new[..., None], batch.gold], -1)

    def item_step(carry, xs):
        p, state = carry
        feats, cand, gold, codes, real = xs

        def objective(q):
            s = eqx.combine(q, static)
            logits, allowed = link_logits(s, feats, cand, codes, weight)
            loss, valid = item_loss(logits, allowed, gold, gamma)
            return loss + l2 * s.l2_penalty(), valid

        (loss, valid), grads = jax.value_and_grad(objective, has_aux=True)(p)
        updates, new_state = update_fn(grads, state, p)
        new_p = optax.apply_updates(p, updates)
        take = valid & real  # padding items change nothing (not even the step counter)
        p = jax.tree.map(lambda a, b: jnp.where(take, a, b), new_p, p)
        state = jax.tree.map(lambda a, b: jnp.where(take, a, b), new_state, state)
        return (p, state), jnp.where(take, loss, 0.0)

    def doc_step(carry, xs):
        return jax.lax.scan(item_step, carry, xs)

    xs = (batch.features, batch.cand, gold_full, batch.codes, batch.item)
    (params, opt_state), losses = jax.lax.scan(doc_step, (params, opt_state), xs)
    return eqx.combine(params, static), opt_state, losses.sum() / jnp.maximum(batch.item.sum(), 1)


@eqx.filter_jit
def eval_loss(scorer, batch, gamma, l2, weight):
    """Objective value on a DocBatch (no update)."""
    return batch_loss(scorer, batch, gamma, l2, weight)


def make_batches(docs, batch_size: int, dtype=None):
    """Group documents of similar length (sorted by item count) into padded DocBatches of ``batch_size``
    docs."""
    order = np.argsort([d.n_items for d in docs], kind="stable")
    return [
        pad_batch([docs[k] for k in order[s : s + batch_size]], n_docs=batch_size, dtype=dtype)
        for s in range(0, len(docs), batch_size)
    ]


def auto_chunk(batch, budget: int | None = None, linear: bool = False) -> int:
    """Items per gradient block for :func:`train_step`: the largest power of two dividing the padded item
    count ``M`` whose block holds at most ``budget`` feature values.

    A block is ``B * chunk * A * F`` values on the autodiff path (default budget ``2**20``) and
    ``chunk * A * F`` on the closed-form linear path (``linear=True``, default budget ``2**16``: the float32
    copy of a block, 256 KB, stays in L2 for both contractions; fastest in benchmarks/bench_l3m.py).
    """
    b, m, a, f = batch.features.shape
    if budget is None:
        budget = 1 << 16 if linear else 1 << 20
    per_item = a * f if linear else b * a * f
    chunk = 1
    while m % (chunk * 2) == 0 and chunk * 2 * per_item <= budget:  # a power of two dividing M
        chunk *= 2
    return chunk


def fit_scorer(
    docs,
    scorer,
    *,
    optimizer=None,
    learning_rate=0.1,
    gamma=1.0,
    l2=0.0,
    weight=np.inf,
    n_epochs=10,
    batch_size=8,
    mode="batch",
    dev_docs=None,
    score_fn=None,
    patience=3,
    seed=0,
    progress=False,
    chunk="auto",
):
    """Train a scorer on documents.

    Parameters
    ----------
    docs : list of Document with gold clusters
    scorer : LinearScorer | MLPScorer (initial parameters)
    optimizer : None | "sgd" | "adam" | optax.GradientTransformation
    gamma, l2, weight : float, temperature, L2 strength, constraint weight (``inf`` = hard)
    n_epochs, batch_size : int
    mode : "batch" (mini-batches of documents) or "item" (per-item online SGD, the seed's algorithm)
    dev_docs : list of Document, optional, for early stopping (on the dev objective unless ``score_fn`` is
        given)
    score_fn : callable(scorer) -> float, optional, higher is better (e.g. dev CoNLL F1)
    patience : int, epochs without dev improvement before stopping
    seed : int, shuffling seed
    chunk : "auto" | int | None
        Items per gradient block in ``mode="batch"`` (see :func:`train_step`); ``"auto"`` uses
        :func:`auto_chunk`. With a chunk and several devices (e.g.
        ``XLA_FLAGS=--xla_force_host_platform_device_count=2``) each step splits the documents over them.

    Returns
    -------
    scorer : the best scorer (by dev criterion if a dev set is given, else the last)
    history : dict with lists ``train_loss``, ``dev`` and int ``best_epoch``
    """
    if mode not in ("batch", "item"):
        raise InvalidInputError(f"mode must be 'batch' or 'item', got {mode!r}")
    opt = make_optimizer(optimizer, learning_rate)
    gamma, l2, weight = (jnp.asarray(v, jnp.float32) for v in (gamma, l2, weight))
    batches = make_batches(docs, batch_size)
    if mode == "batch" and chunk is not None:
        # several devices: documents placed across them once, each step splits them (see train_step)
        batches = [shard_batch(b) for b in batches]
    dev_batches = make_batches(dev_docs, batch_size) if dev_docs else []
    opt_state = opt.init(eqx.filter(scorer, eqx.is_inexact_array))
    rng = np.random.default_rng(seed)
    history = {"train_loss": [], "dev": [], "best_epoch": -1}
    best, best_val, bad = scorer, -np.inf, 0
    epochs = range(n_epochs)
    if progress:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc="L3M epochs")
    for epoch in epochs:
        losses = []
        for b in rng.permutation(len(batches)):
            if mode == "batch":
                c = auto_chunk(batches[b], linear=closed_form(scorer)) if chunk == "auto" else chunk
                scorer, opt_state, loss = train_step(
                    scorer, opt_state, batches[b], gamma, l2, weight, opt.update, chunk=c
                )
            else:
                scorer, opt_state, loss = online_epoch(
                    scorer, opt_state, batches[b], gamma, l2, weight, opt.update
                )
            losses.append(loss)
        history["train_loss"].append(float(np.mean(jax.device_get(losses))))
        if dev_batches or score_fn is not None:
            if score_fn is not None:
                val = float(score_fn(scorer))
            else:
                val = -float(np.mean([eval_loss(scorer, b, gamma, l2, weight) for b in dev_batches]))
            history["dev"].append(val)
            if val > best_val:
                best, best_val, bad, history["best_epoch"] = scorer, val, 0, epoch
            else:
                bad += 1
                if bad >= patience:
                    break
        else:
            best, history["best_epoch"] = scorer, epoch
        if progress:
            epochs.set_postfix(
                loss=history["train_loss"][-1], dev=history["dev"][-1] if history["dev"] else None
            )
    return best, history
