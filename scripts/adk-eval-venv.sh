#!/usr/bin/env bash
# Builds .cache/adk-eval-venv: google-adk's eval extra (pandas, rouge-score, Vertex AI evaluation, ~530 MB) layered
# on the project's .venv, so `adk eval` can run the example in examples/adk_eval without putting that extra into the
# dev environment. The layer sees every package of .venv (a .pth runs site.addsitedir on it) and installs only what
# is missing (or, where the extra needs another version than .venv has, e.g. protobuf < 7, that version in the layer,
# which then shadows .venv's for `adk eval` only). Prints the path of the `adk` launcher it made.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_SITE=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
LAYER=.cache/adk-eval-venv
ADK_VERSION=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('google-adk'))")
STAMP="$LAYER/.installed-$ADK_VERSION"
if [ ! -f "$STAMP" ]; then
  rm -rf "$LAYER"
  python3 -m venv "$LAYER"
  LAYER_SITE=$("$LAYER/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  echo "import site; site.addsitedir('$(realpath "$BASE_SITE")')" > "$LAYER_SITE/scopegate-base-venv.pth"
  "$LAYER/bin/pip" install -q "google-adk[eval]==$ADK_VERSION" >&2
  printf '#!/bin/sh\nexec "%s" -m google.adk.cli "$@"\n' "$(realpath "$LAYER")/bin/python" > "$LAYER/bin/adk"
  chmod +x "$LAYER/bin/adk"
  touch "$STAMP"
fi
realpath "$LAYER/bin/adk"
