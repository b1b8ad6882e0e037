#!/usr/bin/env bash
# Start the services the tests need, run pytest, stop them, and fail when no test ran.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
status=0

cleanup() {
  if [ -n "${STARTED_OPENSEARCH:-}" ]; then
    $BIN/scopegate engine opensearch stop >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# The real OpenSearch node: built with Maven from Maven Central artifacts, started on 127.0.0.1.
if [ -d engines/opensearch ] && $BIN/scopegate engine --help >/dev/null 2>&1; then
  if url=$($BIN/scopegate engine opensearch start --wait --print-url); then
    export SCOPEGATE_OPENSEARCH_URL="$url"
    STARTED_OPENSEARCH=1
    echo "OpenSearch node up at $url"
  else
    echo "ERROR: the OpenSearch node did not start" >&2
    [ "${CI:-}" = "true" ] && exit 1
  fi
fi

$BIN/pytest "$@"
status=$?
if [ $status -eq 5 ]; then
  echo "ERROR: pytest collected no tests" >&2
  status=1
fi
exit $status
