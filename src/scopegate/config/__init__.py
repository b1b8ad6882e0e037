"""Declarative config: one YAML/TOML/JSON file -> the same tools the Python API builds.

config = load_config("scopegate.yaml")      # validated; errors name the bad key and its line
app = await build_app(config)               # backends, tools, guard
agent = LlmAgent(..., tools=app.adk_tools())
"""

from scopegate.config.builder import FeatureUnavailable, ToolApp, build_app
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
    "config_schema",
    "declaration",
    "declarations",
    "load_config",
    "parse_config",
]
