"""Hand-fused device kernels (Pallas) that replace an XLA computation where it pays on an accelerator."""
