"""Vector retrieval: encoders (ONNX, no torch; or any function), the embedded vector store, ingest with embeddings.

Needs the ``vector`` extra (``pip install 'scopegate[vector]'``). See the README, "Relevance and hybrid search".
"""
