"""PPO's minibatch gradient step as one fused kernel (Pallas): `--update-kernel fused`.

XLA runs one PPO gradient step as dozens of kernels: each layer's forward and
backward pass, the loss, the norm and Adam each read and write their operands
in device memory. Here one kernel does the whole step for one agent (forward,
backward, global-norm clipping and Adam), the activations never leave the chip,
and `vmap` over agents becomes the kernel's grid: one program per agent.

It computes what `PPO.gradient_step` computes for the actor-critic MLP with a
categorical policy, `ppo_clip` and `clipped_l2` (the benchmarked PPO), up to
float rounding; `update_rules.fused_update` refuses anything else before a trace.
Triton computes on power-of-two blocks and dots of at least 16, so the layout
(`_to_kernel`) keeps only what those limits need: hidden widths padded (the
padded weights stay exactly zero, because their gradients are zero), the
observation at its own width and dtype, read in power-of-two column blocks,
and each head as one row per output, reduced one at a time. Nothing the kernel
reads or computes is padding to a block of 16 for CartPole's 4 observations
and 2 actions. On a CPU the kernel runs in Pallas's interpret mode, which is
how the tests check it against the XLA step.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.flatten_util import ravel_pytree
from optax import EmptyState, ScaleByAdamState, ScaleByScheduleState

from purerl.checks import ConfigError

B1, B2 = 0.9, 0.999  # optax.adam's moment decays
CHUNK = 128  # samples per pass through the networks inside the kernel: registers, not device memory
CHUNK_VALUES = CHUNK * 64  # at most this many observation values a pass: wider observations take fewer samples,
# or the pass's operands outgrow a GPU core's shared memory (MinAtar's 400 values, counted as 512: 16 samples)


class Packed(NamedTuple):
    """Parameters and Adam moments as per-layer arrays in the kernel's layout (`_to_kernel`) and order: actor
    layers then critic layers, each (kernel, bias); `count` is the optimiser's step count."""

    params: list
    mu: list
    nu: list
    count: jax.Array


class Rows(NamedTuple):
    """A minibatch the kernel reads by index (`FusedUpdate.take`): the whole batch's observations and the rows
    to read, beside the minibatch's other, small fields, gathered by XLA."""

    obs: jax.Array  # [batch, obs_dim]
    indices: jax.Array  # [minibatch]
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


def _padded(n: int) -> int:
    return max(16, 1 << (int(n) - 1).bit_length())


def check_shapes(observation_shape: tuple[int, ...], minibatch_size: int) -> None:
    """Flat observations, and minibatches the kernel can cut into power-of-two chunks; else one ConfigError."""
    if len(observation_shape) != 1:
        raise ConfigError(f"update-kernel fused needs flat observations, got shape {observation_shape}")
    size = minibatch_size
    if size < 16 or (size <= CHUNK and size & (size - 1)) or (size > CHUNK and size % CHUNK):
        raise ConfigError(f"update-kernel fused needs minibatches of a power of two from 16 to {CHUNK} samples, or a "
                          f"multiple of {CHUNK}; got {size}")


class FusedUpdate:
    """pack -> step x epochs x minibatches -> unpack, in place of PPO's XLA gradient step."""

    def __init__(self, num_layers: int, activation: str, num_actions: int, obs_dim: int, learning_rate,
                 normalize_advantages: bool, adam_eps: float, dtype=None):
        self.num_layers = num_layers  # dense layers per network, the head included
        self.activation = activation
        self.num_actions = num_actions
        self.obs_width = _padded(obs_dim)  # the chunk's size depends on it (CHUNK_VALUES)
        self.learning_rate = learning_rate  # (hp, count) -> the learning rate of the step after `count` steps
        self.normalize_advantages = normalize_advantages
        self.adam_eps = adam_eps
        self.dtype = dtype  # the matmuls' operand dtype (None: float32); accumulation is float32
        self.interpret = None  # None: by the platform the program is lowered for (interpret mode on a CPU only)

    # ------------------------------------------------------------ layout
    def pack(self, params, opt_state) -> Packed:
        (_, (adam, _)) = opt_state
        _, unravel = ravel_pytree(params)
        layers = lambda tree: [leaf for net in ("actor", "critic") for i in range(self.num_layers)  # noqa: E731
                               for leaf in _to_kernel(tree["params"][net][f"Dense_{i}"], i, self.num_layers)]
        return Packed(layers(params), layers(unravel(adam.mu)), layers(unravel(adam.nu)), adam.count)

    def unpack(self, packed: Packed, params_like):
        def tree(layers):
            out = jax.tree.map(lambda x: x, params_like)
            it = iter(layers)
            for net in ("actor", "critic"):
                for i in range(self.num_layers):
                    dense = out["params"][net][f"Dense_{i}"]
                    kernel, bias = next(it), next(it)
                    if i == self.num_layers - 1:  # the head, kept as rows
                        kernel = kernel.T
                    dense["kernel"] = kernel[:dense["kernel"].shape[0], :dense["kernel"].shape[1]]
                    dense["bias"] = bias[0, :dense["bias"].shape[0]]
            return out

        flat = lambda layers: ravel_pytree(tree(layers))[0]  # noqa: E731
        adam = ScaleByAdamState(count=packed.count, mu=flat(packed.mu), nu=flat(packed.nu))
        opt_state = (EmptyState(), (adam, ScaleByScheduleState(count=packed.count)))  # both count every step
        return tree(packed.params), opt_state

    def take(self, batch, indices, gather) -> Rows:
        """The minibatch at `indices` without copying its observations: the kernel reads them from the batch by
        index, so an epoch passes over them once, in the kernel, instead of through a gathered copy too."""
        small = lambda x: jnp.take(x, indices, axis=0)  # noqa: E731
        return Rows(batch.obs, indices, *(small(x) for x in (batch.action, batch.log_prob, batch.value,
                                                               batch.advantage, batch.target)))

    # ------------------------------------------------------------- a step
    def step(self, packed: Packed, minibatch, hp, meta_params=None) -> tuple[Packed, dict[str, jax.Array]]:
        """One gradient step on a minibatch: `Batch` of samples, or `Rows` of the batch."""
        if not isinstance(minibatch, Rows):
            minibatch = Rows(minibatch.obs, jnp.arange(minibatch.obs.shape[0], dtype=jnp.int32), minibatch.action,
                             minibatch.log_prob, minibatch.value, minibatch.advantage, minibatch.target)
        advantage = minibatch.advantage
        if self.normalize_advantages:
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        t = packed.count + 1
        scalars = jnp.stack([self.learning_rate(hp, packed.count), 1.0 - B1 ** t.astype(jnp.float32),
                             1.0 - B2 ** t.astype(jnp.float32), hp.clip_eps, hp.vf_coef, hp.ent_coef,
                             hp.max_grad_norm, self.adam_eps]).astype(jnp.float32)
        data = (minibatch.indices.astype(jnp.int32), minibatch.obs, minibatch.action.astype(jnp.int32),
                minibatch.log_prob, minibatch.value, advantage, minibatch.target)
        params, mu, nu, stats = self._call(scalars, data, packed)
        names = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
        return Packed(params, mu, nu, t), {name: stats[i] for i, name in enumerate(names)}

    def _call(self, scalars, data, packed: Packed):
        n = len(packed.params)
        leaves = [*packed.params, *packed.mu, *packed.nu]
        shapes = [jax.ShapeDtypeStruct(x.shape, jnp.float32) for x in leaves]
        # params, mu, nu (in place); the gradients, accumulated over chunks in device memory that the kernel's
        # own program reads back (the L2 cache holds it), then dropped; five loss statistics, padded to 8
        out_shape = [*shapes, *shapes[:n], jax.ShapeDtypeStruct((8,), jnp.float32)]
        first = 1 + len(data)

        def call(interpret: bool, *args):
            kernel = functools.partial(_kernel, num_layers=self.num_layers, activation=self.activation,
                                       num_actions=self.num_actions, samples=data[0].shape[0],
                                       chunk=min(CHUNK, max(16, CHUNK_VALUES // self.obs_width)),
                                       barrier=not interpret, dtype=self.dtype)
            return tuple(pl.pallas_call(kernel, out_shape=out_shape, interpret=interpret,
                                        input_output_aliases={first + i: i for i in range(3 * n)},
                                        compiler_params=_compiler_params(interpret), name="ppo_update")(*args))

        args = (scalars, *data, *leaves)
        if self.interpret is None:  # decided when lowering, for the platform lowered for: not the default backend,
            # which is the CPU when a GPU program is compiled on a machine without one (bench/gpu_proxy.py)
            out = jax.lax.platform_dependent(*args, cpu=functools.partial(call, True),
                                             default=functools.partial(call, False))
        else:
            out = call(self.interpret, *args)
        return list(out[:n]), list(out[n:2 * n]), list(out[2 * n:3 * n]), out[-1]


def _compiler_params(interpret: bool):
    if interpret:
        return None
    from jax.experimental.pallas import triton as pl_triton

    return pl_triton.CompilerParams(num_warps=8, num_stages=1)


def _to_kernel(dense, i: int, num_layers: int) -> tuple[jax.Array, jax.Array]:
    """A dense layer's (kernel, bias) in the kernel's layout. Hidden widths are padded to powers of two of at
    least 16 (the padding stays exactly zero: its gradients are zero); the first layer keeps the observation's
    width, which the kernel reads in power-of-two blocks; the head is stored as one row per output ([out, in]),
    which the kernel reduces one at a time, so no action or value is padded to a block of 16."""
    kernel, bias = dense["kernel"], dense["bias"][None, :]
    if i == num_layers - 1:
        return _pad_to(kernel.T, kernel.shape[1], _padded(kernel.shape[0])), bias
    rows = kernel.shape[0] if i == 0 else _padded(kernel.shape[0])
    return _pad_to(kernel, rows, _padded(kernel.shape[1])), _pad_to(bias, 1, _padded(bias.shape[1]))


def _pad_to(x: jax.Array, rows: int, cols: int) -> jax.Array:
    return jnp.pad(x, [(0, rows - x.shape[0]), (0, cols - x.shape[1])])


# ------------------------------------------------------------------ the kernel
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


def _kernel(scalar_ref, index_ref, obs_ref, action_ref, log_prob_ref, value_ref, advantage_ref, target_ref, *refs,
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

