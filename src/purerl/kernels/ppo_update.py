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
from purerl.kernels.ppo_kernel import B1, B2, ppo_step

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
            kernel = functools.partial(ppo_step, num_layers=self.num_layers, activation=self.activation,
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
