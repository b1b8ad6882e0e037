"""The operations layer shared by every tool: call cap, rate limit, cache, call log, replay, metrics."""

from scopegate.guard.cache import MemoryStore, RedisStore, TieredStore, ToolCache, cache_key
from scopegate.guard.calllog import CallbackSink, CallLog, LogSink, MemorySink, RotatingFileSink
from scopegate.guard.cap import CallCap, CapPolicy, RateLimiter
from scopegate.guard.guard import Guard, GuardedTool
from scopegate.guard.metrics import GuardMetrics
from scopegate.guard.replay import ReplayReport, Thresholds, replay

__all__ = [
    "CallCap",
    "CallLog",
    "CallbackSink",
    "CapPolicy",
    "Guard",
    "GuardMetrics",
    "GuardedTool",
    "LogSink",
    "MemorySink",
    "MemoryStore",
    "RateLimiter",
    "RedisStore",
    "ReplayReport",
    "RotatingFileSink",
    "Thresholds",
    "TieredStore",
    "ToolCache",
    "cache_key",
    "replay",
]
