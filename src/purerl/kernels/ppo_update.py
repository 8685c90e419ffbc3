"""PPO's minibatch gradient step as one fused kernel (Pallas): `--update-kernel fused`.

XLA runs one PPO gradient step as dozens of kernels: each layer's forward and
backward pass, the loss, the norm and Adam each read and write their operands
in device memory. Here one kernel does the whole step for one agent (forward,
backward, global-norm clipping and Adam), the activations never leave the chip,
and `vmap` over agents becomes the kernel's grid: one program per agent.

It computes what `PPO.gradient_step` computes for the actor-critic MLP with a
categorical policy, `ppo_clip` and `clipped_l2` (the benchmarked PPO), up to
float rounding; `update_rules.fused_update` refuses anything else before a trace. Layers
are padded to powers of two of at least 16 (Triton's block and dot limits): the
padded weights stay exactly zero, because their gradients are zero, so the
result does not depend on the padding. On a CPU the kernel runs in Pallas's
interpret mode, which is how the tests check it against the XLA step.
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
# or the pass's operands outgrow a GPU core's shared memory (MinAtar's 400 values, padded to 512: 16 samples)
NEG = -1e30  # logit of a padded action: probability 0, and 0 * NEG stays finite in the entropy


class Packed(NamedTuple):
    """Parameters and Adam moments as padded per-layer arrays, in the kernel's order: actor layers then critic
    layers, each (kernel [in, out], bias [1, out]); `count` is the optimiser's step count."""

    params: list
    mu: list
    nu: list
    count: jax.Array


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
        self.obs_pad = _padded(obs_dim)
        self.learning_rate = learning_rate  # (hp, count) -> the learning rate of the step after `count` steps
        self.normalize_advantages = normalize_advantages
        self.adam_eps = adam_eps
        self.dtype = dtype  # the matmuls' operand dtype (None: float32); accumulation is float32
        self.interpret = None  # None: by the platform the program is lowered for (interpret mode on a CPU only)

    # ------------------------------------------------------------ layout
    def pack(self, params, opt_state) -> Packed:
        (_, (adam, _)) = opt_state
        _, unravel = ravel_pytree(params)
        layers = lambda tree: [_pad(leaf) for net in ("actor", "critic")  # noqa: E731
                               for i in range(self.num_layers)
                               for leaf in (tree["params"][net][f"Dense_{i}"]["kernel"],
                                            tree["params"][net][f"Dense_{i}"]["bias"][None, :])]
        return Packed(layers(params), layers(unravel(adam.mu)), layers(unravel(adam.nu)), adam.count)

    def unpack(self, packed: Packed, params_like):
        def tree(layers):
            out = jax.tree.map(lambda x: x, params_like)
            it = iter(layers)
            for net in ("actor", "critic"):
                for i in range(self.num_layers):
                    dense = out["params"][net][f"Dense_{i}"]
                    kernel, bias = next(it), next(it)
                    dense["kernel"] = kernel[:dense["kernel"].shape[0], :dense["kernel"].shape[1]]
                    dense["bias"] = bias[0, :dense["bias"].shape[0]]
            return out

        flat = lambda layers: ravel_pytree(tree(layers))[0]  # noqa: E731
        adam = ScaleByAdamState(count=packed.count, mu=flat(packed.mu), nu=flat(packed.nu))
        opt_state = (EmptyState(), (adam, ScaleByScheduleState(count=packed.count)))  # both count every step
        return tree(packed.params), opt_state

    def prepare(self, batch):
        """The batch with its observations padded once per update, not once per step."""
        obs = batch.obs
        return batch._replace(obs=jnp.pad(obs, [(0, 0)] * (obs.ndim - 1) + [(0, self.obs_pad - obs.shape[-1])]))

    # ------------------------------------------------------------- a step
    def step(self, packed: Packed, minibatch, hp, meta_params=None) -> tuple[Packed, dict[str, jax.Array]]:
        """One gradient step on a minibatch (`Batch` of samples, observations already padded)."""
        advantage = minibatch.advantage
        if self.normalize_advantages:
            advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        t = packed.count + 1
        scalars = jnp.stack([self.learning_rate(hp, packed.count), 1.0 - B1 ** t.astype(jnp.float32),
                             1.0 - B2 ** t.astype(jnp.float32), hp.clip_eps, hp.vf_coef, hp.ent_coef,
                             hp.max_grad_norm, self.adam_eps]).astype(jnp.float32)
        data = (minibatch.obs, minibatch.action.astype(jnp.int32), minibatch.log_prob, minibatch.value, advantage,
                minibatch.target)
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
                                       chunk=min(CHUNK, max(16, CHUNK_VALUES // self.obs_pad)),
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


def _pad(x: jax.Array) -> jax.Array:
    rows = x.shape[0] if x.shape[0] == 1 else _padded(x.shape[0])
    return jnp.pad(x, [(0, rows - x.shape[0]), (0, _padded(x.shape[1]) - x.shape[1])])


# ------------------------------------------------------------------ the kernel
def _kernel(scalar_ref, obs_ref, action_ref, log_prob_ref, value_ref, advantage_ref, target_ref, *refs,
            num_layers: int, activation: str, num_actions: int, samples: int, chunk: int, barrier: bool, dtype):
    n = 4 * num_layers  # (kernel, bias) x layers x 2 networks
    p_in, m_in, v_in = refs[:n], refs[n:2 * n], refs[2 * n:3 * n]
    p_out, m_out, v_out, grad_ref, stats_ref = refs[3 * n:4 * n], refs[4 * n:5 * n], refs[5 * n:6 * n], \
        refs[6 * n:7 * n], refs[7 * n]
    lr, bias1, bias2, clip_eps, vf_coef, ent_coef, max_norm, eps = (scalar_ref[i] for i in range(8))
    chunk = min(chunk, samples)
    actor, critic = p_in[:2 * num_layers], p_in[2 * num_layers:]
    act = jnp.tanh if activation == "tanh" else (lambda z: jnp.maximum(z, 0.0))
    # the activations' derivatives from their outputs, so that no pre-activation stays live until the backward pass
    d_act = (lambda h: 1.0 - h * h) if activation == "tanh" else (lambda h: (h > 0.0).astype(jnp.float32))

    def dot(a, b):
        if dtype is None:
            return jnp.dot(a, b)
        return jnp.dot(a.astype(dtype), b.astype(dtype), preferred_element_type=jnp.float32)

    def forward(net, x):
        hs = [x]
        for i in range(num_layers):
            z = dot(hs[-1], net[2 * i][...]) + net[2 * i + 1][...]
            hs.append(act(z) if i < num_layers - 1 else z)
        return hs

    def backward(net, hs, d_out):
        grads, d = [None] * (2 * num_layers), d_out
        for i in reversed(range(num_layers)):
            if i < num_layers - 1:
                d = d * d_act(hs[i + 1])
            grads[2 * i] = dot(hs[i].T, d)
            grads[2 * i + 1] = jnp.sum(d, axis=0, keepdims=True)
            if i:
                d = dot(d, net[2 * i][...].T)
        return grads

    def chunk_grads(c):
        rows = pl.ds(c * chunk, chunk)
        x, action = obs_ref[rows, :], action_ref[rows]
        old_log_prob, old_value, advantage, target = (r[rows] for r in (log_prob_ref, value_ref, advantage_ref,
                                                                         target_ref))
        scale = 1.0 / samples  # every loss is a mean over the minibatch
        # actor: log-softmax over the real actions, PPO's clipped objective and the entropy bonus
        hs = forward(actor, x)
        cols = jax.lax.broadcasted_iota(jnp.int32, hs[-1].shape, 1)
        logits = jnp.where(cols < num_actions, hs[-1], NEG)
        shifted = logits - jnp.max(logits, axis=1, keepdims=True)
        log_probs = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=1, keepdims=True))
        probs = jnp.exp(log_probs)
        chosen = (cols == action[:, None]).astype(jnp.float32)
        log_prob = jnp.sum(chosen * log_probs, axis=1)
        log_ratio = log_prob - old_log_prob
        ratio = jnp.exp(log_ratio)
        clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
        unclipped_term, clipped_term = ratio * advantage, clipped * advantage
        objective = jnp.minimum(unclipped_term, clipped_term)
        # d min / d ratio as jax differentiates it: each side's share (half each on a tie) times its slope
        share = jnp.where(unclipped_term < clipped_term, 1.0, jnp.where(unclipped_term == clipped_term, 0.5, 0.0))
        inside = ((ratio > 1.0 - clip_eps) & (ratio < 1.0 + clip_eps)).astype(jnp.float32)
        d_ratio = -scale * advantage * (share + (1.0 - share) * inside)
        entropy = -jnp.sum(probs * log_probs, axis=1)
        d_log_prob = d_ratio * ratio
        d_logits = (d_log_prob[:, None] * (chosen - probs)
                    + (ent_coef * scale) * probs * (log_probs + entropy[:, None]))
        actor_grads = backward(actor, hs, d_logits)
        # critic: PPO's clipped squared error on column 0 of the padded head
        hs = forward(critic, x)
        cols = jax.lax.broadcasted_iota(jnp.int32, hs[-1].shape, 1)
        value = jnp.sum(jnp.where(cols == 0, hs[-1], 0.0), axis=1)
        moved = value - old_value
        clipped_value = old_value + jnp.clip(moved, -clip_eps, clip_eps)
        error, clipped_error = value - target, clipped_value - target
        square, clipped_square = error * error, clipped_error * clipped_error
        value_loss = 0.5 * jnp.maximum(square, clipped_square)
        share = jnp.where(square > clipped_square, 1.0, jnp.where(square == clipped_square, 0.5, 0.0))
        inside = ((moved > -clip_eps) & (moved < clip_eps)).astype(jnp.float32)
        d_value = (vf_coef * scale) * (share * error + (1.0 - share) * clipped_error * inside)
        critic_grads = backward(critic, hs, jnp.where(cols == 0, d_value[:, None], 0.0))
        stats = _vector([-jnp.sum(objective), jnp.sum(value_loss), jnp.sum(entropy),
                         jnp.sum((ratio - 1.0) - log_ratio),
                         jnp.sum((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32))], 8)
        return actor_grads + critic_grads, stats

    grads, stats = chunk_grads(0)
    for ref, grad in zip(grad_ref, grads):
        ref[...] = grad

    def accumulate(c, stats):
        if barrier:
            _barrier()
        more, more_stats = chunk_grads(c)
        for ref, grad in zip(grad_ref, more):
            ref[...] = ref[...] + grad
        return stats + more_stats

    stats = jax.lax.fori_loop(1, samples // chunk, accumulate, stats)
    if barrier:
        _barrier()
    # global-norm clipping (optax.clip_by_global_norm), then Adam, one layer at a time
    norm = jnp.sqrt(sum(jnp.sum(ref[...] * ref[...]) for ref in grad_ref))
    for p, m, v, po, mo, vo, g in zip(p_in, m_in, v_in, p_out, m_out, v_out, grad_ref):
        grad = jnp.where(norm < max_norm, g[...], g[...] / norm * max_norm)
        mu = B1 * m[...] + (1.0 - B1) * grad
        nu = B2 * v[...] + (1.0 - B2) * (grad * grad)
        update = (mu / bias1) / (jnp.sqrt(nu / bias2) + eps)
        po[...] = p[...] + (-lr) * update
        mo[...] = mu
        vo[...] = nu
    stats_ref[...] = stats / samples


def _vector(scalars: list, size: int) -> jax.Array:
    """Scalars as one vector of a power-of-two size (Triton stacks only two arrays at a time)."""
    index = jax.lax.broadcasted_iota(jnp.int32, (size,), 0)
    return sum(jnp.where(index == i, x, 0.0) for i, x in enumerate(scalars))


def _barrier():
    from jax.experimental.pallas import triton as pl_triton

    pl_triton.debug_barrier()

