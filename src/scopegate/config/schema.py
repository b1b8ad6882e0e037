"""The JSON Schema (draft 2020-12) of a scopegate config file, generated from the typed model.

``scopegate check --schema`` prints it (point an editor's YAML language server at that output).
"""

from scopegate.config.model import SCHEMA_ID, config_schema

__all__ = ["SCHEMA_ID", "config_schema"]
