"""Scripts that train a peer PPO implementation, each run inside the peer's own venv.

They are executed as plain scripts (``<peer venv>/bin/python sb3_ppo.py ...``) by
`purerl_lab.bench.peers.run_peer`, never imported by purerl: they import only the peer's
packages and `peer_common` from this directory. This file exists so the scripts ship
with the package.
"""
