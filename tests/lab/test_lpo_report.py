"""The LPO section of the comparison document: a compare run on an evolution's training task records every
objective's fitness per seed as the evolution defined it, and the section judges each drift by its paired difference
from PPO there, from the data, and says what to regenerate for a record made before the fitness was recorded."""

from __future__ import annotations

import json
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization
from cli_run import SMALL

from purerl import stats
from purerl.cli import build_parser, main, train_spec
from purerl.algos.ppo_config import PPOConfig
from purerl.checks import ConfigError
from purerl.meta import evolve
from purerl_lab.studies.dpo import compare, lpo_report
from purerl.run import results
from purerl.run.trainspec import TrainSpec
from purerl_lab.studies.dpo import lpo

TASK = {"env": "CartPole-v1", "fitness": "auc", "total_timesteps": 1024, "num_envs": 4, "num_steps": 32}


def _evolution(folder, task=TASK, means=(100.0,) * 10 + (180.0,) * 10):
    """An evolve run's files as the LPO section reads them: config.json, generations.csv, the ES mean."""
    folder.mkdir(parents=True)
    es = {"strategy": "open_es", "population_size": 4, "rollouts": 1, "lr": 0.01, "lr_final": 0.002, "std": 0.05,
          "std_final": 0.02, "fitness_shaping": "centered_rank", "seed": 0}
    (folder / "config.json").write_text(json.dumps({"es": es, "task_info": task}))
    (folder / "generations.csv").write_text("generation,best,mean,std,median,nan_count,seconds\n" + "".join(
        f"{g},0,{m},0,0,0,6\n" for g, m in enumerate(means)))
    params = {**lpo.initial_params(), "out": jax.random.normal(jax.random.PRNGKey(1), (128, 1)) * 0.1}
    (folder / "mean_meta_params.msgpack").write_bytes(serialization.to_bytes(params))
    return folder / "mean_meta_params.msgpack"


def test_compare_on_the_training_task_records_each_seeds_fitness_as_evolve_defines_it(tmp_path, capsys):
    path = _evolution(tmp_path / "lpo" / "es0")
    argv = ["compare", "--objectives", f"ppo,lpo:{path}", "--seeds", "2", *SMALL]
    assert main([*argv, "--runs-dir", str(tmp_path / "runs")]) == 0, capsys.readouterr().err
    record = json.loads((tmp_path / "runs" / "report" / "CartPole-v1.json").read_text())
    base = train_spec(build_parser().parse_args(argv))
    for label in ("ppo", "lpo-es0"):
        recorded = record["objectives"][label]["fitness_auc"]
        curve = results.read_member_metric(tmp_path / "runs" / "CartPole-v1" / label)
        assert recorded["n"] == 2 and np.array_equal(recorded["values"], evolve.curve_fitness(curve, "auc"))
    # the drift's fitness is what its evolution's `train_fitness` gives for the same seeds, up to metrics.csv's
    # 6 significant digits
    spec = TrainSpec(**{**base.__dict__, "objective": f"lpo:{path}"})
    fitness = jax.jit(evolve.train_fitness(spec.build(), base.hyperparams.as_arrays(), "auc"))
    trained = [float(fitness(jax.random.PRNGKey(seed), spec.meta_params())) for seed in (0, 1)]
    np.testing.assert_allclose(record["objectives"]["lpo-es0"]["fitness_auc"]["values"], trained, rtol=1e-5)
    # a transfer (another budget) records no fitness; neither does a comparison without LPO columns
    other = PPOConfig(env="CartPole-v1", num_envs=4, num_steps=32, total_timesteps=2048)
    assert lpo_report.fitness_kinds([f"lpo:{path}"], other) == [] and lpo_report.fitness_kinds(["ppo", "dpo"], other) == []
    assert lpo_report.fitness_kinds(["ppo", f"lpo:{path.parent}"], base.config) == ["auc"]


def test_curve_fitness_is_train_fitness_of_a_recorded_curve():
    rng = np.random.default_rng(0)
    curve = np.where(rng.random((30, 3)) < 0.3, np.nan, rng.normal(100.0, 30.0, (30, 3)))
    curve[:, 2] = np.nan  # no episode ended: no fitness
    for kind in evolve.FITNESS_KINDS:
        fitness = evolve.train_fitness(lambda member, hp, meta: SimpleNamespace(
            metrics={"episode_return": jnp.asarray(curve[:, member]),
                     "episodes": jnp.asarray(np.isfinite(curve[:, member]), jnp.float32)},
            state=SimpleNamespace(params={"w": jnp.ones(3)})), None, kind)
        np.testing.assert_allclose(evolve.curve_fitness(curve, kind), [fitness(i, None) for i in range(3)], rtol=1e-6)
    # a diverged member (an episode ended with a NaN return) has no fitness in either, not its returns before
    diverged, ended = curve.copy(), np.isfinite(curve).astype(np.float32)
    diverged[-3:, 0], ended[-3:, 0] = np.nan, 1.0
    for kind in evolve.FITNESS_KINDS:
        fitness = evolve.train_fitness(lambda member, hp, meta: SimpleNamespace(
            metrics={"episode_return": jnp.asarray(diverged[:, member]), "episodes": jnp.asarray(ended[:, member])},
            state=SimpleNamespace(params={"w": jnp.ones(3)})), None, kind)
        from_curve = evolve.curve_fitness(diverged, kind, episodes=ended)
        assert np.isnan(from_curve[0]) and np.isnan(fitness(0, None)) and np.isfinite(from_curve[1])
        np.testing.assert_allclose(from_curve[1:], [fitness(i, None) for i in (1, 2)], rtol=1e-6)
    with pytest.raises(ConfigError, match="unknown fitness 'median'"):
        evolve.curve_fitness(curve, "median")


def _training_task_record(ppo: np.ndarray, drift: np.ndarray | None) -> dict:
    rows = {"ppo": {"final_return": stats.summarize(ppo)}, "lpo-es0": {"final_return": stats.summarize(ppo)}}
    if drift is not None:
        rows["ppo"]["fitness_auc"], rows["lpo-es0"]["fitness_auc"] = stats.summarize(ppo), stats.summarize(drift)
    return {"env": "CartPole-v1", "seeds": list(range(len(ppo))), "env_steps_per_run": 1024, "objectives": rows,
            **{key: TASK[key] for key in lpo_report.TASK_KEYS}}


def _render(tmp_path, record: dict) -> str:
    folder = tmp_path / "dpo"
    _evolution(folder / "lpo" / "es0")
    (folder / "CartPole-v1.json").write_text(json.dumps(record))
    return compare.write_report(folder, tmp_path / "dpo.md", "T").read_text()


def test_the_lpo_section_says_not_reproduced_when_no_paired_ci_is_above_zero(tmp_path):
    ppo = np.linspace(150.0, 220.0, 16)
    text = _render(tmp_path, _training_task_record(ppo, ppo + np.where(np.arange(16) % 2, 6.0, -4.0)))
    assert "over the last 10: 180.0 (std 0.0); PPO's on the same fitness (below): 185.0 [" in text
    assert "| lpo-es0 | 186.0 [" in text and "| ppo | 185.0 [" in text
    assert "LPO, not reproduced at this budget: no evolved drift is ahead of PPO on its own training task" in text
    assert "lpo-es0 +1.0 [" in text and "lpo-es0 from 100.0 to 180.0; PPO itself scores 185.0 [" in text
    assert "mean return over all 8 updates" in text and "ahead of PPO on its training task" not in text


def test_the_lpo_section_says_ahead_when_a_paired_ci_is_above_zero(tmp_path):
    ppo = np.linspace(150.0, 220.0, 16)
    text = _render(tmp_path, _training_task_record(ppo, ppo + np.where(np.arange(16) % 2, 6.0, 2.0)))
    assert ("LPO ahead of PPO on its training task, on the study's seeds: lpo-es0 (paired 95% CI above zero; "
            "lpo-es0 +4.0 [") in text
    assert "not reproduced" not in text


def test_ahead_on_one_of_several_drifts_says_how_many_were_tested(tmp_path):
    """Each paired interval is 95% on its own: with two drifts, "ahead" on one is one of two chances."""
    ppo = np.linspace(150.0, 220.0, 16)
    record = _training_task_record(ppo, ppo + np.where(np.arange(16) % 2, 6.0, 2.0))
    record["objectives"]["lpo-es1"] = {"final_return": stats.summarize(ppo),
                                       "fitness_auc": stats.summarize(ppo + np.where(np.arange(16) % 2, 6.0, -6.0))}
    _evolution(tmp_path / "dpo" / "lpo" / "es1")
    text = _render(tmp_path, record)
    assert ("LPO ahead of PPO on its training task, on the study's seeds: lpo-es0 (paired 95% CI above zero for 1 "
            "of the 2 drifts, "
            "each interval 95% on its own, not widened for testing 2; lpo-es0 +4.0 [") in text


def test_few_seeds_give_no_verdict_and_an_old_record_asks_for_its_part_to_be_regenerated(tmp_path):
    few = np.array([150.0, 160.0, 170.0])
    assert "LPO, not judged: below 10 seeds a difference has no CI (lpo-es0 +30.0 (n=3, no CI))" in _render(
        tmp_path / "few", _training_task_record(few, few + 30.0))
    old = _render(tmp_path / "old", _training_task_record(np.linspace(150.0, 220.0, 16), None))
    assert "PPO's on the same fitness (below): not recorded" in old and "LPO, not" not in old
    assert "is not in the record of CartPole-v1 at 1,024 env steps per run: it was made before" in old
    assert "Regenerate the CartPole-v1 part" in old
    elsewhere = _training_task_record(np.linspace(150.0, 220.0, 16), None) | {"total_timesteps": 2048}
    assert "not measured, no row above is its training task" in _render(tmp_path / "elsewhere", elsewhere)


def test_the_report_names_the_presets_settings_only_where_every_row_ran_them():
    """dpo.md says its objectives ran at PPO's preset settings; a compare run given other settings must not."""
    from pathlib import Path

    published = json.loads((Path(__file__).parents[2] / "docs/results/dpo/Acrobot-v1.json").read_text())
    assert compare._at_preset(published)
    assert not compare._at_preset({**published, "hyperparams": {**published["hyperparams"], "lr": 1e-3}})
    assert not compare._at_preset({**published, "num_envs": published["num_envs"] * 2})
    assert not compare._at_preset({**published, "preset": "no such preset"})
