from pathlib import Path

import numpy as np

from purerl import stats


def test_iqm_drops_the_outer_quartiles():
    assert stats.iqm(np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 1000.0])) == 3.5


def test_bootstrap_ci_brackets_the_iqm_and_shrinks_with_more_seeds():
    rng = np.random.default_rng(0)
    few, many = rng.normal(10, 2, 8), rng.normal(10, 2, 256)
    low_f, high_f = stats.bootstrap_ci(few)
    low_m, high_m = stats.bootstrap_ci(many)
    assert low_f <= stats.iqm(few) <= high_f
    assert high_m - low_m < high_f - low_f
    assert low_m < 10 < high_m


def test_forward_fill_and_smooth():
    x = np.array([[1.0], [np.nan], [3.0]])
    np.testing.assert_array_equal(stats.forward_fill(x)[:, 0], [1, 1, 3])
    np.testing.assert_allclose(stats.smooth(np.arange(4.0), 2), [0, 0.5, 1.5, 2.5])


def test_train_summary_shows_a_ci_only_from_10_seeds(capsys):
    from purerl.cli.train import print_summary

    by_setting = {"lr=0.1": stats.summarize(np.array([10.0, 20.0, 30.0, 40.0])),
                  "lr=0.2": stats.summarize(np.arange(10.0))}
    summary = {"env": "CartPole-v1", "final_return_window_updates": 10, "final_return_by_setting": by_setting,
               "members": 14, "env_steps_per_member": 1000, "compile_s": 1.0, "run_s": 1.0, "env_steps_per_s": 1e4}
    print_summary(Path("runs/x"), summary)
    rows = {line.split("│")[1].strip(): line for line in capsys.readouterr().out.splitlines() if "lr=" in line}
    assert "per seed 10.0, 20.0, 30.0, 40.0 (n=4, no CI)" in rows["lr=0.1"] and "[" not in rows["lr=0.1"]
    low, high = by_setting["lr=0.2"]["ci95_low"], by_setting["lr=0.2"]["ci95_high"]
    assert f"[{low:.1f}, {high:.1f}]" in rows["lr=0.2"]


def test_a_diverged_member_has_no_final_return_rather_than_its_last_one_before_it_diverged():
    from purerl.run import results

    returns = np.tile(np.arange(30.0)[:, None], (1, 3))
    episodes = np.ones_like(returns)
    returns[::3, 1] = np.nan  # member 1: no episode ended in every third update, which the last return fills
    episodes[::3, 1] = 0.0
    returns[20:, 2] = np.nan  # member 2 diverged at update 20: its episodes still end, with NaN returns
    final = results.final_returns(returns, episodes)
    assert final[0] == np.mean(np.arange(20.0, 30.0)) and np.isfinite(final[1]) and np.isnan(final[2])
    assert results.final_returns(returns)[2] == 19.0  # without episodes it cannot tell: the filled value
    returns[25:, 2] = 7.0  # a PBT member that diverged, then took a healthy member's state: recovered
    assert results.final_returns(returns, episodes)[2] == 13.0  # (19 x 5 filled + 7 x 5) / 10


def test_a_json_record_of_a_diverged_seed_reads_as_not_finite():
    """json_safe stores NaN as None: the words made from a record must still say what it is."""
    from purerl_lab.studies.dpo import compare
    from purerl.run.results import json_safe

    record = json_safe(stats.summarize(np.array([np.nan, *range(11)])))
    assert record["values"][0] is None and stats.not_finite(record)
    words = stats.describe(record)
    assert words.startswith("per seed nan, 0.0") and words.endswith("(n=12, 1 not finite, no CI)")
    fine = stats.summarize(np.arange(12.0))
    rows = {"ppo": {"final_return": record}, "dpo": {"final_return": fine}}
    assert compare._verdict(rows) == stats.NOT_DISTINGUISHABLE
    assert compare._flatness({"final_return": record, "return_at_80pct": fine}).endswith("(a seed diverged)")


def test_no_ci_reason_names_why_in_the_unit_given():
    many, few = stats.summarize(np.arange(12.0)), stats.summarize(np.arange(4.0))
    lost = stats.summarize(np.array([np.nan, *range(11)]))
    assert stats.no_ci_reason(many, many) is None
    assert stats.no_ci_reason(many, few) == "no CI: fewer than 10 seeds"
    assert stats.no_ci_reason(few, lost, unit="repetition") == "no CI: a repetition's value is not finite (diverged)"
    rows = {"ppo": {"final_return": many}, "dpo": {"final_return": lost}}
    from purerl_lab.studies.dpo import compare

    assert compare._against_ppo(rows, "dpo")[0] == "not tested (no CI: a seed's value is not finite (diverged))"
