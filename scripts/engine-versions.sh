#!/usr/bin/env bash
# Run the version subset against the engine versions beside today's defaults (issue 35 item 6):
# OpenSearch 3 (launcher built from Maven Central, Java 21+) and Elasticsearch 9 (integ-test zip, Java 21+).
# For each: start a node with `--version`, run the existing-index tests (isolation property included) and
# the engine's backend tests against it, stop it. The defaults (OpenSearch 2.19, Elasticsearch 8.19) are
# what scripts/run-tests.sh runs. The Java is found as `scopegate engine ... --help` says
# (SCOPEGATE_OPENSEARCH_JAVA_HOME / SCOPEGATE_ELASTICSEARCH_JAVA_HOME, else the newest JDK installed).
#   scripts/engine-versions.sh                 # both
#   scripts/engine-versions.sh opensearch:3    # one (engine:version, any version --version takes)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(opensearch:3 elasticsearch:9)

declare -A TESTS=(
  [opensearch]="tests/integration/opensearch/test_existing_index.py tests/integration/opensearch/test_opensearch_backend.py"
  [elasticsearch]="tests/integration/elasticsearch/test_existing_index_es.py tests/integration/elasticsearch/test_elasticsearch_backend.py"
)
declare -A URL_ENV=([opensearch]=SCOPEGATE_OPENSEARCH_URL [elasticsearch]=SCOPEGATE_ELASTICSEARCH_URL)

RUNNING=()
cleanup() {
  for target in "${RUNNING[@]}"; do
    $PY -m scopegate.cli engine "${target%%:*}" stop --version "${target#*:}" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT

mkdir -p .cache
status=0
summary=()
for target in "${TARGETS[@]}"; do
  engine=${target%%:*}
  version=${target#*:}
  if [ -z "${TESTS[$engine]:-}" ] || [ "$engine" = "$target" ]; then
    echo "ERROR: expected engine:version (opensearch:3, elasticsearch:9), got $target" >&2
    exit 2
  fi
  began=$(date +%s)
  if ! out=$($PY -m scopegate.cli engine "$engine" start --version "$version" --clean 2>&1); then
    echo "$out" | tail -20 >&2
    echo "ERROR: $engine $version did not start" >&2
    summary+=("$engine $version: did not start")
    status=1
    continue
  fi
  RUNNING+=("$target")
  url=$($PY -m scopegate.cli engine "$engine" url --version "$version")
  started=$(date +%s)
  echo "== $engine $version at $url (started in $((started - began)) s)"
  # shellcheck disable=SC2086  # the test list is a word list
  env "${URL_ENV[$engine]}=$url" SCOPEGATE_"${engine^^}"_VERSION="$version" \
    $PY -m pytest ${TESTS[$engine]} -q -p no:cacheprovider 2>&1 | tee ".cache/engine-versions-$engine-$version.log" | tail -3
  rc=${PIPESTATUS[0]}
  last=$(grep -E '^[=]* ?[0-9]+ (passed|failed)' ".cache/engine-versions-$engine-$version.log" | tail -1 | tr -d '=')
  $PY -m scopegate.cli engine "$engine" stop --version "$version" >/dev/null 2>&1 || true
  ended=$(date +%s)
  summary+=("$engine $version: ${last:-no tests ran} (node start $((started - began)) s, total $((ended - began)) s)")
  if [ "$rc" -ne 0 ] || [ -z "$last" ]; then status=1; fi
done

echo
echo "== engine versions"
printf '%s\n' "${summary[@]}"
exit $status
