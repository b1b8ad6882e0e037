"""A hostile upstream for the OpenAPI runtime: bombs, lying framing, careless echoes (tests, benchmark)."""

from scopegate_lab.hostile.bombs import CATALOGUE, Bomb
from scopegate_lab.hostile.server import SPEC_PATH, TOKEN, RunningHostile, running_hostile_service, start_hostile

__all__ = ["CATALOGUE", "SPEC_PATH", "TOKEN", "Bomb", "RunningHostile", "running_hostile_service", "start_hostile"]
