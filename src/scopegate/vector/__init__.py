"""Vector retrieval: encoders (ONNX, no torch; or any function), the embedded vector store, ingest with embeddings.

Needs the ``vector`` extra (``pip install 'scopegate[vector]'``). See docs/relevance.md.
"""
