"""Members in CPU groups: the same runs as all at once, one group after another."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.algos import registry
from purerl.algos.ppo_config import HyperParams, PPOConfig
from purerl.checks import ConfigError
from purerl.run.population import Placement, batched, in_groups, make_members


def scaled(x, shared):
    return {"sum": x["a"] * shared + x["b"].sum(), "rows": x["b"] * 2.0}


@pytest.mark.parametrize("group", [1, 3, 4, 7, 9])
def test_in_groups_is_vmap_for_any_group_size(group):
    members = {"a": jnp.arange(7.0), "b": jnp.arange(21.0).reshape(7, 3)}  # 7 members: groups of 3 leave 1
    grouped = jax.jit(in_groups(scaled, group))(members, 0.5)
    expected = jax.vmap(scaled, in_axes=(0, None))(members, 0.5)
    jax.tree.map(np.testing.assert_array_equal, grouped, expected)


def test_a_cpu_group_runs_groups_one_after_another():
    placement = Placement.for_members(4)
    grouped = batched(scaled, placement, num_shared_args=1, cpu_group=1)
    members = placement.put({"a": np.arange(4.0), "b": np.ones((4, 3))})
    assert "while" in grouped.lower(members, 0.5).as_text()  # lax.map's loop over the groups
    assert "while" not in batched(scaled, placement, num_shared_args=1).lower(members, 0.5).as_text()


def test_ppo_in_groups_of_two_trains_the_members_it_trains_all_at_once():
    config = PPOConfig(num_envs=4, num_steps=16, total_timesteps=256, update_epochs=2, num_minibatches=2)
    members = make_members([0, 1, 2, 3, 4], HyperParams())
    placement = Placement.for_members(len(members))
    keys, hps = placement.put(members.keys()), placement.put(members.hyperparams.as_arrays())
    returns = []
    for group in (0, 2):
        train = registry.build("ppo", config.replace(cpu_group=group))
        program = batched(train, placement, num_member_args=2, cpu_group=group)
        metrics = placement.get(program(keys, hps).metrics, len(members))
        returns.append(np.stack([metrics["episode_return"], metrics["value_loss"]]))
    # Same programs per member; only the float rounding of a batch's kernels may differ.
    np.testing.assert_allclose(returns[1], returns[0], rtol=1e-4, atol=1e-6, equal_nan=True)


def test_a_negative_cpu_group_is_refused():
    with pytest.raises(ConfigError, match="cpu-group must be an integer"):
        PPOConfig(cpu_group=-1).validate()


@pytest.mark.parametrize("grid", [{"nope": [1.0]}, {"nope": [1.0, 2.0]}, {"lr": [1e-3, 2e-3], "buffer_size": [1]}])
def test_a_grid_naming_no_hyperparameter_is_refused_whatever_its_length(grid):
    """One value sweeps nothing and is left out of the members, but a name that is not a hyperparameter is a
    mistake, not a setting to leave out."""
    with pytest.raises(ConfigError, match="cannot sweep"):
        make_members([0], HyperParams(), grid)
    assert make_members([0, 1], HyperParams(), {"lr": [1e-3]}).swept == ()  # a known name with one value: no sweep
