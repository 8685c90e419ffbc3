"""Published results: the catalogue of studies, the provenance each document part records, fingerprints of the
computation behind it, and the staleness check."""
