"""Pinned local models: the requirements files with wheel hashes, and their assembly."""
