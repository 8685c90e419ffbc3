"""Q-networks for the value-based learners: an MLP giving one value per discrete action.

DQN uses a plain ReLU MLP (PureJaxRL/CleanRL: 120-84, flax's default LeCun-normal
init). PQN puts a LayerNorm after every hidden layer: Gallici et al. (2024) show that
this keeps TD learning stable without a target network or replay buffer.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn

from purerl.nets.layers import ACTIVATIONS


class QNetwork(nn.Module):
    num_actions: int
    hidden_sizes: Sequence[int] = (120, 84)
    activation: str = "relu"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs):
        x = obs
        for size in self.hidden_sizes:
            x = nn.Dense(size)(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = ACTIVATIONS[self.activation](x)
        return nn.Dense(self.num_actions)(x)
