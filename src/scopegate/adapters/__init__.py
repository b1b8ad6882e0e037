"""Adapters translate between agent frameworks and scopegate's neutral tools."""
