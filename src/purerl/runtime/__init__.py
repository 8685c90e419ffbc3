"""The runtime: one JAX device per CPU core, the persistent compile cache, the machine facts results record, and
whether JAX will run on a GPU (known before a backend starts)."""
