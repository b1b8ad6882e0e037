"""Local engine nodes for development and tests (not needed at run time by the library).

- :mod:`scopegate.engines.opensearch_node`: build/start/stop the OpenSearch 2.19 test node.
- :mod:`scopegate.cli.engines`: the ``scopegate engine ...`` commands.
"""

__all__: list[str] = []
