"""Meta-learning over whole training runs: evolution strategies (evosax) over meta-parameters, their run files,
and comparisons of policy objectives on identical seeds."""
