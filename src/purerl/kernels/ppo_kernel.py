"""The body of the fused PPO step (`ppo_update.py`): one program per agent, on the refs `FusedUpdate` lays out.

Forward and backward passes of both MLPs over power-of-two chunks of the minibatch, the clipped policy and value
losses, the entropy bonus, global-norm clipping and Adam, on Triton's terms: every block a power of two, dots of at
least 16 on each side, the observation read in power-of-two column blocks by row index, each head reduced one
output at a time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

B1, B2 = 0.9, 0.999  # optax.adam's moment decays


def _pieces(n: int) -> list[tuple[int, int]]:
    """(start, size) of the power-of-two pieces that cover range(n), largest first: Triton's blocks."""
    out, start = [], 0
    for bit in reversed(range(int(n).bit_length())):
        if n & (1 << bit):
            out.append((start, 1 << bit))
            start += 1 << bit
    return out


def _blocks(shape) -> list[tuple]:
    """Indices of power-of-two blocks that cover a 2-D ref."""
    return [(pl.ds(r, rn), pl.ds(c, cn)) for r, rn in _pieces(shape[0]) for c, cn in _pieces(shape[1])]


def ppo_step(scalar_ref, index_ref, obs_ref, action_ref, log_prob_ref, value_ref, advantage_ref, target_ref, *refs,
            num_layers: int, activation: str, num_actions: int, samples: int, chunk: int, barrier: bool, dtype):
    n = 4 * num_layers  # (kernel, bias) x layers x 2 networks
    p_in, m_in, v_in = refs[:n], refs[n:2 * n], refs[2 * n:3 * n]
    p_out, m_out, v_out, grad_ref, stats_ref = refs[3 * n:4 * n], refs[4 * n:5 * n], refs[5 * n:6 * n], \
        refs[6 * n:7 * n], refs[7 * n]
    lr, bias1, bias2, clip_eps, vf_coef, ent_coef, max_norm, eps = (scalar_ref[i] for i in range(8))
    chunk = min(chunk, samples)
    head = 2 * (num_layers - 1)  # the head's kernel within a network's refs
    act = jnp.tanh if activation == "tanh" else (lambda z: jnp.maximum(z, 0.0))
    # the activations' derivatives from their outputs, so that no pre-activation stays live until the backward pass
    d_act = (lambda h: 1.0 - h * h) if activation == "tanh" else (lambda h: (h > 0.0).astype(jnp.float32))
    whole = (slice(None), slice(None))

    def dot(a, b):
        if dtype is None:
            return jnp.dot(a, b)
        return jnp.dot(a.astype(dtype), b.astype(dtype), preferred_element_type=jnp.float32)

    def row(ref, i):  # one row of a 2-D ref, [1, width]
        return ref[pl.ds(i, 1), :]

    def forward(net, xs):
        """Every layer's output; the head's as one [chunk] vector per output. The first layer reads the
        observation in power-of-two column blocks (`xs`: (start, size, block)); a block too narrow for a dot
        (Triton's 16) is one column, multiplied into its weight row."""
        z = net[1][...]
        for start, size, x in xs:
            z = z + (dot(x, net[0][pl.ds(start, size), :]) if size >= 16 else x * row(net[0], start))
        hs = [act(z)]
        for i in range(1, num_layers - 1):
            hs.append(act(dot(hs[-1], net[2 * i][...]) + net[2 * i + 1][...]))
        outs = [jnp.sum(hs[-1] * row(net[head], j), axis=1) + jnp.sum(net[head + 1][:, pl.ds(j, 1)])
                for j in range(net[head].shape[0])]
        return hs, outs

    def backward(net, xs, hs, d_outs):
        """(index, gradient block) of every parameter, for an upstream gradient per head output."""
        grads = []
        for j, d in enumerate(d_outs):
            grads += [((pl.ds(j, 1), slice(None)), (head, jnp.sum(hs[-1] * d[:, None], axis=0, keepdims=True))),
                      ((slice(None), pl.ds(j, 1)), (head + 1, jnp.full((1, 1), jnp.sum(d))))]
        d = sum(d[:, None] * row(net[head], j) for j, d in enumerate(d_outs))
        for i in reversed(range(num_layers - 1)):
            d = d * d_act(hs[i])
            grads.append((whole, (2 * i + 1, jnp.sum(d, axis=0, keepdims=True))))
            if i:
                grads.append((whole, (2 * i, dot(hs[i - 1].T, d))))
                d = dot(d, net[2 * i][...].T)
        for start, size, x in xs:
            grads.append(((pl.ds(start, size), slice(None)),
                          (0, dot(x.T, d) if size >= 16 else jnp.sum(x * d, axis=0, keepdims=True))))
        return grads

    def chunk_grads(c):
        rows = pl.ds(c * chunk, chunk)
        samples_at = index_ref[rows]  # the chunk's rows of the batch
        xs = [(s, size, obs_ref[samples_at, pl.ds(s, size)].astype(jnp.float32))
              for start, width in _pieces(obs_ref.shape[-1])
              for s, size in ([(start, width)] if width >= 16 else [(start + k, 1) for k in range(width)])]
        action = action_ref[rows]
        old_log_prob, old_value, advantage, target = (r[rows] for r in (log_prob_ref, value_ref, advantage_ref,
                                                                         target_ref))
        scale = 1.0 / samples  # every loss is a mean over the minibatch
        # actor: log-softmax over the actions, PPO's clipped objective and the entropy bonus
        hs, logits = forward(p_in[:2 * num_layers], xs)
        top = logits[0]
        for z in logits[1:]:
            top = jnp.maximum(top, z)
        shifted = [z - top for z in logits]
        log_norm = jnp.log(sum(jnp.exp(z) for z in shifted))
        log_probs = [z - log_norm for z in shifted]
        probs = [jnp.exp(z) for z in log_probs]
        chosen = [(action == j).astype(jnp.float32) for j in range(num_actions)]
        log_prob = sum(c_ * lp for c_, lp in zip(chosen, log_probs))
        log_ratio = log_prob - old_log_prob
        ratio = jnp.exp(log_ratio)
        clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
        unclipped_term, clipped_term = ratio * advantage, clipped * advantage
        objective = jnp.minimum(unclipped_term, clipped_term)
        # d min / d ratio as jax differentiates it: each side's share (half each on a tie) times its slope
        share = jnp.where(unclipped_term < clipped_term, 1.0, jnp.where(unclipped_term == clipped_term, 0.5, 0.0))
        inside = ((ratio > 1.0 - clip_eps) & (ratio < 1.0 + clip_eps)).astype(jnp.float32)
        d_ratio = -scale * advantage * (share + (1.0 - share) * inside)
        entropy = -sum(p * lp for p, lp in zip(probs, log_probs))
        d_log_prob = d_ratio * ratio
        d_logits = [d_log_prob * (c_ - p) + (ent_coef * scale) * p * (lp + entropy)
                    for c_, p, lp in zip(chosen, probs, log_probs)]
        grads = backward(p_in[:2 * num_layers], xs, hs, d_logits)
        # critic: PPO's clipped squared error
        hs, (value,) = forward(p_in[2 * num_layers:], xs)
        moved = value - old_value
        clipped_value = old_value + jnp.clip(moved, -clip_eps, clip_eps)
        error, clipped_error = value - target, clipped_value - target
        square, clipped_square = error * error, clipped_error * clipped_error
        value_loss = 0.5 * jnp.maximum(square, clipped_square)
        share = jnp.where(square > clipped_square, 1.0, jnp.where(square == clipped_square, 0.5, 0.0))
        inside = ((moved > -clip_eps) & (moved < clip_eps)).astype(jnp.float32)
        d_value = (vf_coef * scale) * (share * error + (1.0 - share) * clipped_error * inside)
        grads += [(index, (2 * num_layers + k, g))
                  for index, (k, g) in backward(p_in[2 * num_layers:], xs, hs, [d_value])]
        stats = _vector([-jnp.sum(objective), jnp.sum(value_loss), jnp.sum(entropy),
                         jnp.sum((ratio - 1.0) - log_ratio),
                         jnp.sum((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32))], 8)
        return grads, stats

    grads, stats = chunk_grads(0)
    for index, (k, grad) in grads:
        grad_ref[k][index] = grad

    def accumulate(c, stats):
        if barrier:
            _barrier()
        more, more_stats = chunk_grads(c)
        for index, (k, grad) in more:
            grad_ref[k][index] = grad_ref[k][index] + grad
        return stats + more_stats

    stats = jax.lax.fori_loop(1, samples // chunk, accumulate, stats)
    if barrier:
        _barrier()
    # global-norm clipping (optax.clip_by_global_norm), then Adam, one power-of-two block at a time
    norm = jnp.sqrt(sum(jnp.sum(ref[b] * ref[b]) for ref in grad_ref for b in _blocks(ref.shape)))
    for p, m, v, po, mo, vo, g in zip(p_in, m_in, v_in, p_out, m_out, v_out, grad_ref):
        for b in _blocks(p.shape):
            grad = jnp.where(norm < max_norm, g[b], g[b] / norm * max_norm)
            mu = B1 * m[b] + (1.0 - B1) * grad
            nu = B2 * v[b] + (1.0 - B2) * (grad * grad)
            update = (mu / bias1) / (jnp.sqrt(nu / bias2) + eps)
            po[b] = p[b] + (-lr) * update
            mo[b] = mu
            vo[b] = nu
    stats_ref[...] = stats / samples


def _vector(scalars: list, size: int) -> jax.Array:
    """Scalars as one vector of a power-of-two size (Triton stacks only two arrays at a time)."""
    index = jax.lax.broadcasted_iota(jnp.int32, (size,), 0)
    return sum(jnp.where(index == i, x, 0.0) for i, x in enumerate(scalars))


def _barrier():
    from jax.experimental.pallas import triton as pl_triton

    pl_triton.debug_barrier()

