"""``rocmkit doctor``: levelled checks, isolated, with one verdict and machine-readable reports."""
