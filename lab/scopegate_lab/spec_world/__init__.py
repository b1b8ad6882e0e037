"""A loopback service answering a large OpenAPI spec's operations from a small per-tenant world (evals)."""

from scopegate_lab.spec_world.server import CALLS_PATH, Call, SpecWorld, World

__all__ = ["CALLS_PATH", "Call", "SpecWorld", "World"]
