"""Networks (flax.linen): feed-forward and recurrent actor-critics, Q-networks, and the action distributions."""
