"""Doctor checks, one module per subject (see ``rocmkit.doctor.registry.CHECK_MODULES``)."""
