"""Declarative config: one YAML/TOML/JSON file -> the same tools the Python API builds.

config = load_config("scopegate.yaml")      # the typed model; errors name the bad key and its line
app = build_tool_app(config)                # backends, tools, guard (scopegate.load_config does both)
agent = LlmAgent(..., tools=[scopegate.adk.ScopegateToolset(app)])
"""

from scopegate.config.builder import FeatureUnavailable, ToolApp, build_app, build_tool_app
from scopegate.config.declarations import declaration, declarations
from scopegate.config.loader import load_config, parse_config
from scopegate.config.model import AppConfig, config_schema
from scopegate.validation import ConfigValidationError, Problem

__all__ = [
    "AppConfig",
    "ConfigValidationError",
    "FeatureUnavailable",
    "Problem",
    "ToolApp",
    "build_app",
    "build_tool_app",
    "config_schema",
    "declaration",
    "declarations",
    "load_config",
    "parse_config",
]
