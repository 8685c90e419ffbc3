"""Meta-learning over whole training runs: evolution strategies (evosax) over the meta-parameters of any hook
(`evolve.py`, `strategies.py`), what an evolve run writes (`evolve_files.py`), and the open list of meta-tasks
`purerl evolve` runs (`tasks.py`)."""
