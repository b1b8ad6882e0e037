#!/usr/bin/env bash
# The unit layer (tests/unit) on every Python the classifiers claim beside .venv's, on both snippet paths:
#   native       the C scanner built (the editable install compiles it) and required
#                (CI=true SCOPEGATE_EXPECT_NATIVE=1: tests/unit/test_wordscan.py fails without it);
#   pure-python  SCOPEGATE_NATIVE_SNIPPETS=0 (scopegate.search.native): the path of an install without
#                a C compiler, under the same property and snapshot tests (test_wordscan.py skips).
# Plus the pure path on .venv's own Python, whose native run is `make test`'s.
#
#   bash scripts/unit-other-pythons.sh               # 3.12 and 3.13 (native, pure), .venv (pure)
#   bash scripts/unit-other-pythons.sh 3.13          # one version, native and pure
#   SCOPEGATE_UNIT_LANES=pure bash scripts/...       # only the pure runs (native / pure / both)
#   extra pytest arguments: after --, e.g. -- -x -k snippet
#
# Interpreters come from scripts/python-versions.sh. Each version's venv lives under
# ~/.cache/scopegate/pythons/venv-X.Y (SCOPEGATE_PYTHONS overrides the folder) with the dev extras, so a
# re-run on the same machine only re-points the editable install at this checkout (and recompiles the
# extension, ~20 s); the dev extras are installed again only when pyproject.toml changed. Two workers run
# the lanes (two cores); each lane's output is in .cache/unit-other-pythons/<lane>.log and its last lines
# are printed. Exits non-zero when a lane fails, when its venv cannot be made, or when pytest ran no test.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${SCOPEGATE_PYTHONS:-$HOME/.cache/scopegate/pythons}
LOGS=$ROOT/.cache/unit-other-pythons
LANES=${SCOPEGATE_UNIT_LANES:-both}
VERSIONS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do VERSIONS+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
PYTEST_ARGS=("$@")
DEFAULT_VERSIONS=0
if [ ${#VERSIONS[@]} -eq 0 ]; then VERSIONS=(3.12 3.13); DEFAULT_VERSIONS=1; fi
mkdir -p "$LOGS" "$CACHE"

if ! PYTHONS=$(bash scripts/python-versions.sh "${VERSIONS[@]}"); then
  echo "ERROR: unit-other-pythons: not every Python of ${VERSIONS[*]} could be found or built" >&2
  exit 1
fi
mapfile -t PYTHONS <<<"$PYTHONS"

fingerprint() { cat "$@" | sha256sum | cut -c1-16; }
DEPS_KEY=$(fingerprint pyproject.toml)

prepare_venv() {  # $1: X.Y, $2: interpreter -> prints the venv's python; output in the version's log
  local version=$1 python=$2 venv="$CACHE/venv-$1"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
    rm -rf "$venv"
    "$python" -m venv "$venv" >&2 || return 1
  fi
  if [ "$(cat "$venv/.deps" 2>/dev/null)" != "$DEPS_KEY" ]; then
    "$venv/bin/python" -m pip install -q --upgrade pip >&2 || return 1
    "$venv/bin/python" -m pip install -q -e ".[dev]" >&2 || return 1
    echo "$DEPS_KEY" >"$venv/.deps"
  else
    # This checkout, its C extension compiled for this Python (the checkout may be a new clone).
    "$venv/bin/python" -m pip install -q --no-deps -e . >&2 || return 1
  fi
  "$venv/bin/python" -c 'from scopegate.search import _wordscan' || { echo "the C extension did not build" >&2; return 1; }
  echo "$venv/bin/python"
}

run_lane() {  # $1: lane name, $2: python, $3: native|pure -> pytest's status
  local name=$1 python=$2 path=$3 log="$LOGS/$1.log"
  # This checkout's src (and its lab, which tests import) first: .venv's editable install may point at another
  # checkout of the project.
  local env=(env -u SCOPEGATE_EXPECT_NATIVE -u SCOPEGATE_NATIVE_SNIPPETS "PYTHONPATH=$ROOT/src:$ROOT/lab${PYTHONPATH:+:$PYTHONPATH}")
  if [ "$path" = native ]; then env+=(CI=true SCOPEGATE_EXPECT_NATIVE=1); else env+=(SCOPEGATE_NATIVE_SNIPPETS=0); fi
  local start=$SECONDS status
  "${env[@]}" "$python" -m pytest tests/unit -q -p no:cacheprovider "${PYTEST_ARGS[@]}" >>"$log" 2>&1
  status=$?
  [ $status -eq 5 ] && echo "ERROR: pytest collected no tests" >>"$log" && status=1
  echo "lane $name: exit $status in $((SECONDS - start)) s" >>"$log"
  return $status
}

worker() {  # $@: version indexes; runs the lanes of those versions one after another
  local failed=0 i version python
  for i in "$@"; do
    version=${VERSIONS[$i]}
    local log="$LOGS/venv-$version.log"
    : >"$log"
    if ! python=$(prepare_venv "$version" "${PYTHONS[$i]}" 2>>"$log"); then
      echo "ERROR: the venv for Python $version could not be made (see $log)" >>"$log"
      failed=1
      continue
    fi
    for path in native pure; do
      [ "$LANES" = both ] || [ "$LANES" = "$path" ] || continue
      : >"$LOGS/$version-$path.log"
      run_lane "$version-$path" "$python" "$path" || failed=1
    done
  done
  return $failed
}

rm -f "$LOGS"/*.log
START=$SECONDS
pids=()
# Two workers: version 1, 3, ... and 2, 4, ...; the .venv pure lane joins the second.
odd=() even=()
for i in "${!VERSIONS[@]}"; do
  if [ $((i % 2)) -eq 0 ]; then odd+=("$i"); else even+=("$i"); fi
done
worker "${odd[@]}" &
pids+=($!)
(
  failed=0
  [ ${#even[@]} -eq 0 ] || worker "${even[@]}" || failed=1
  if [ $DEFAULT_VERSIONS -eq 1 ] && [ "$LANES" != native ] && [ -x .venv/bin/python ]; then
    : >"$LOGS/venv-pure.log"
    run_lane venv-pure .venv/bin/python pure || failed=1
  fi
  exit $failed
) &
pids+=($!)
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done

for log in "$LOGS"/*.log; do
  [ -s "$log" ] || continue
  case $(basename "$log") in
    venv-3.*) grep -q ERROR "$log" || continue; echo "== $(basename "$log" .log)"; tail -n 20 "$log" ;;
    *) echo "== $(basename "$log" .log)"; tail -n 3 "$log" ;;
  esac
done
echo "unit-other-pythons: $((SECONDS - START)) s, exit $status"
exit $status
