"""Test helpers shared across areas (importable as tests.support)."""
