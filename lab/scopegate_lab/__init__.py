"""scopegate's lab: what tests and benchmarks use and users never call.

Oracles (:mod:`~scopegate_lab.oracle`, :mod:`~scopegate_lab.agg_oracle`, :mod:`~scopegate_lab.openapi_oracle`),
the workload generator, the multi-process consistency harness, synthetic specs, the backend contract, load
drivers, hostile HTTP servers (:mod:`~scopegate_lab.hostile`), and the launchers of the Keycloak identity
provider and of local multi-node clusters. It imports scopegate; scopegate never imports it
(``tests/unit/test_layout.py`` checks the wheel).
"""
