"""Runnable example services used by tests, benchmarks and the demo."""
