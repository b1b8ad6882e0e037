#!/usr/bin/env bash
# Start the engines the tests need, run pytest, stop them, and fail when no test ran.
#   The OpenSearch 2.19.6 node is built with Maven from Maven Central and started on 127.0.0.1
#   here; the Elasticsearch 8.19 node (tests/integration/elasticsearch) and Redis
#   (tests/integration/guard) are started by their own pytest fixtures.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python

cleanup() {
  $PY -m scopegate.engines.opensearch_node stop >/dev/null 2>&1 || true
  $PY -m scopegate.engines.elasticsearch_node stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

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
# The Elasticsearch tests start their own node (the fault test must own the node it freezes);
# with CI=true they fail, rather than skip, when it cannot start.

$PY -m pytest "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "ERROR: pytest collected no tests" >&2
  status=1
fi
exit $status
