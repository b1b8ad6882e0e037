"""Declarative config: one YAML/TOML/JSON file -> the same tools the Python API builds.

config = load_config("scopegate.yaml")      # validated; errors name the bad key
app = await build_app(config)               # backends, tools, guard
agent = LlmAgent(..., tools=app.adk_tools())
"""

from scopegate.config.builder import FeatureUnavailable, ToolApp, build_app
from scopegate.config.declarations import declaration, declarations
from scopegate.config.loader import ConfigValidationError, Problem
from scopegate.config.model import AppConfig, load_config, parse_config
from scopegate.config.schema import config_schema

__all__ = [
    "AppConfig",
    "ConfigValidationError",
    "FeatureUnavailable",
    "Problem",
    "ToolApp",
    "build_app",
    "config_schema",
    "declaration",
    "declarations",
    "load_config",
    "parse_config",
]
