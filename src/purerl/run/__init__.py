"""Running experiments: a population in one program, chunked and checkpointed, and the run directory it writes
(config, metrics, summary, checkpoints, locks), its loggers and progress bar, reruns, trained policies, and
side-by-side plots and tables of finished runs."""
