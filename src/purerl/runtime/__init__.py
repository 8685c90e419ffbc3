"""The runtime: one JAX device per CPU core, the persistent compile cache, and the machine facts results record."""
