"""Fingerprints of the M-FOS commands: the matrix-game table, and the paper-scale and coin-game runs."""

from __future__ import annotations

import numpy as np

from purerl_lab.publish.fingerprint.core import Fingerprint, host_common, probe_inputs
from purerl_lab.publish.catalog import FRESH_PART
from purerl_lab.studies.commands import parse_command


# ------------------------------------------------------------------------------------------------ M-FOS
def _mfos_settings(args, table: bool):
    from purerl_lab.studies.mfos import cli as mfos_cli
    from purerl_lab.studies.mfos.settings import resolve

    preset = args.preset or ("small" if table else "cpu")
    settings = resolve(preset, args.seeds, args.num_games, args.meta_episodes, args.scoring)
    self_play = {k: v for k, v in dict(self_play_meta_episodes=args.self_play_meta_episodes,
                                       self_play_num_games=args.self_play_num_games).items() if v is not None}
    if self_play:
        settings = settings.replace(**self_play)
    return preset, settings, mfos_cli.seeds_of(args, settings.seeds)


def _numbers(settings) -> dict:
    """A settings dataclass without its prose (a preset's description)."""
    import dataclasses

    return {k: v for k, v in dataclasses.asdict(settings).items() if k != "description"}


def _meta_training(fp: Fingerprint, name: str, init, advance, extra=None) -> None:
    import jax
    import jax.numpy as jnp

    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    run = fp.program(f"{name} init", init, key)
    step = jax.ShapeDtypeStruct((), jnp.int32)
    fp.program(f"{name} meta-episodes", advance, run, step, step)
    return run


def _mfos_vs_learner(fp: Fingerprint, game: str, opponent: str, settings, logits) -> None:
    import jax
    import jax.numpy as jnp

    from purerl_lab.studies.mfos.analysis import play_meta_episode
    from purerl_lab.studies.mfos.meta_game import make_mfos_train

    ppo, init, advance = make_mfos_train(game, opponent, settings, logits)
    run = _meta_training(fp, f"{game} mfos vs {opponent}", init, advance)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    fp.program(f"{game} mfos vs {opponent} analysis",
               lambda p, k, greedy: play_meta_episode(ppo, p, k, settings.num_games, greedy),
               run.state.params, key, jax.ShapeDtypeStruct((), jnp.bool_))


def _mfos_host(fp: Fingerprint, game: str) -> None:
    from purerl_lab.studies.mfos import analysis, runs

    fp.probe("mfos summaries", lambda: {"seeds": [runs.summarize_seeds(v) for v in probe_inputs()],
                                        "window": [runs.final_window(n) for n in (1, 9, 10, 100, 1024)]})
    if game in analysis.games.GAMES:
        fp.probe(f"{game} extortion analysis", _extortion_probe, game)


def _extortion_probe(game: str) -> dict:
    """`extortion_analysis` of late policies: M-FOS playing an extortionate, a fair and a random memory-one policy."""
    from purerl_lab.studies.mfos import analysis

    rng = np.random.default_rng(5)
    out = []
    for policy in ([0.9, 0.5, 0.3, 0.0], [1.0, 0.0, 1.0, 0.0], list(rng.random(4))):
        mfos = np.broadcast_to(np.array([0.5, *policy]), (30, 4, 5)) + rng.normal(0, 0.01, (30, 4, 5))
        opponent = rng.random((30, 4, 5))
        rewards = rng.normal(1.0, 0.5, (30, 4, 2))
        out.append(analysis.extortion_analysis(analysis.Trajectory(mfos=mfos, opponent=opponent, rewards=rewards), game))
    return {"analyses": out}


def mfos_table_part(fp: Fingerprint, command: str, game: str) -> None:
    """`purerl mfos table`, one game (one part): MAMAML's starts, the plain learners' pairs, M-FOS against each
    learner and its analysis, M-FOS self-play, and the statistics."""
    import jax
    import jax.numpy as jnp

    from purerl_lab.studies.mfos.baselines import BASELINE_PAIRS, make_baselines
    from purerl_lab.studies.mfos.self_play import make_self_play_train
    from purerl_lab.studies.mfos.settings import HYPERPARAMS, MFOS_SEAT, OPPONENT_SEAT, OPPONENTS, mamaml_init, seed_keys

    args = parse_command(command)
    preset, settings, seeds = _mfos_settings(args, table=True)
    fp.input("settings", {"settings": _numbers(settings), "seeds": seeds, "hyperparams": HYPERPARAMS})
    fp.program("seed keys", lambda: seed_keys(seeds))
    seats = (OPPONENT_SEAT, MFOS_SEAT)
    for seat in seats:  # MAMAML's meta-learned start, key derivation included; the programs below take it as data
        fp.program(f"{game} mamaml start, seat {seat}", lambda seat=seat: mamaml_init(game, seat, settings.mamaml_steps))
    start = jax.eval_shape(lambda: mamaml_init(game, OPPONENT_SEAT, settings.mamaml_steps))
    fp.program(f"{game} baselines", lambda keys, inits: jax.vmap(make_baselines(
        game, settings.num_games, inits, BASELINE_PAIRS, settings.warmup_steps))(keys),
        jax.ShapeDtypeStruct((len(seeds), 2), jnp.uint32), {seat: start for seat in seats})
    for opponent in OPPONENTS:  # the mamaml opponent's start is a constant of its programs: zeros stand in for it
        _mfos_vs_learner(fp, game, opponent, settings, jnp.zeros(start.shape, start.dtype))
    _, init, advance = make_self_play_train(game, settings.for_self_play())
    _meta_training(fp, f"{game} self-play", init, advance)
    _mfos_host(fp, game)
    host_common(fp)


def mfos_run_part(fp: Fingerprint, command: str, part: str | None = None) -> None:
    """`purerl mfos --game G --opponent O` (one run), or the coin game against PPO."""
    from purerl_lab.studies.mfos.settings import HYPERPARAMS, seed_keys

    args = parse_command(command)
    if args.game == "coin":
        from purerl_lab.studies.mfos import cli as mfos_cli
        from purerl_lab.studies.mfos import coin

        preset = args.preset or "cpu"
        changes = {k: v for k, v in dict(seeds=args.seeds, num_boards=args.num_games,
                                         meta_episodes=args.meta_episodes).items() if v is not None}
        settings = coin.PRESETS[preset].replace(**changes)
        seeds = mfos_cli.seeds_of(args, settings.seeds)
        fp.input("run config", {k: v for k, v in coin.run_config(settings, seeds, preset).items()
                                if k not in ("command", "preset", "settings")} | {"settings": _numbers(settings)})
        _, init, advance = coin.make_coin_train(settings)
        _meta_training(fp, "coin mfos vs ppo", init, advance)
        fp.program("seed keys", lambda: seed_keys(seeds))
        _mfos_host(fp, "coin")
        host_common(fp)
        return
    preset, settings, seeds = _mfos_settings(args, table=False)
    game, opponent = args.game or "ipd", args.opponent or "nl"
    fp.input("settings", {"settings": _numbers(settings), "seeds": seeds, "hyperparams": HYPERPARAMS,
                          "game": game, "opponent": opponent})
    fp.program("seed keys", lambda: seed_keys(seeds))
    if opponent == "self":
        from purerl_lab.studies.mfos.self_play import make_self_play_train

        _, init, advance = make_self_play_train(game, settings)
        _meta_training(fp, f"{game} self-play", init, advance)
    else:
        from purerl_lab.studies.mfos.settings import OPPONENT_SEAT, mamaml_init

        logits = None
        if opponent == "mamaml":
            import jax
            import jax.numpy as jnp

            fp.program(f"{game} mamaml start, seat {OPPONENT_SEAT}",
                       lambda: mamaml_init(game, OPPONENT_SEAT, settings.mamaml_steps))
            start = jax.eval_shape(lambda: mamaml_init(game, OPPONENT_SEAT, settings.mamaml_steps))
            logits = jnp.zeros(start.shape, start.dtype)
        _mfos_vs_learner(fp, game, opponent, settings, logits)
    _mfos_host(fp, game)
    host_common(fp)




def mfos_part(fp: Fingerprint, command: str, part: str) -> None:
    """Any M-FOS document's command: the table, restricted to the part's game, or one run."""
    if command.startswith("purerl mfos table"):
        mfos_table_part(fp, command, part.removeprefix(FRESH_PART))
    else:
        mfos_run_part(fp, command)
