"""OpenAPI specs to reviewed, typed tool declarations (load, select, translate, snapshot)."""
