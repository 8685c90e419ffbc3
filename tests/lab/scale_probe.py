"""Run by test_scale.py in a subprocess whose XLA_FLAGS set the number of host devices.

Trains a 10-member population through the CLI's code path (uneven over 4 and 8 devices) and evaluates
6 ES candidates in chunks of at most MAX_PARALLEL (more devices than candidates on 8), then prints the numbers
to compare as one JSON line.
"""

import json
import sys
from pathlib import Path

import jax
import numpy as np

from purerl.meta import evolve, strategies
from purerl.run import experiment
from purerl.cli import build_parser, train_spec
from purerl_lab.studies import value_loss

MEMBERS = 10
out = Path(sys.argv[1])
args = build_parser().parse_args(["train", "--seeds", str(MEMBERS), "--num-envs", "4", "--num-steps", "32",
                                  "--total-timesteps", "1024", "--update-epochs", "2", "--num-minibatches", "2"])
summary = experiment.run(train_spec(args), out / "train", progress=False)
task = value_loss.make_task(total_timesteps=2048)
evolution = evolve.Evolution(task, strategies.ESConfig(population_size=6, std=1.0, max_parallel=int(sys.argv[2]) or None))
population, _ = evolution.strategy.ask(jax.random.PRNGKey(0), evolution.init_state(), evolution.params)
fitness = evolution.evaluate(jax.random.PRNGKey(1), population)
metrics = np.genfromtxt(out / "train" / "metrics.csv", delimiter=",", skip_header=1, filling_values=np.nan)
print(json.dumps({"devices": jax.device_count(), "summary_devices": summary["devices"],
                  "metrics": metrics.tolist(), "fitness": fitness.tolist()}))
