#!/usr/bin/env bash
# Prints the path of a CPython interpreter for each version asked (default: 3.12 3.13), one a line,
# in the order asked; exits non-zero naming the versions it could not find or build.
#
#   bash scripts/python-versions.sh            # -> /root/.pyenv/versions/3.12.1/bin/python3.12 ...
#   bash scripts/python-versions.sh 3.13
#
# Where an interpreter comes from, first found first:
#   1. SCOPEGATE_PYTHON_3_12 / SCOPEGATE_PYTHON_3_13 (a path; for a machine laid out otherwise);
#   2. pythonX.Y on PATH, when it runs (a pyenv shim for another global version does not);
#   3. pyenv's versions folder: the machine image of this project's kind ships 3.12 and 3.13 there
#      beside its 3.11, so on a fresh machine this costs nothing;
#   4. a build cached under ~/.cache/scopegate/pythons/X.Y (SCOPEGATE_PYTHONS overrides the folder);
#   5. a build from Debian's source package of that version (deb-src of trixie, Debian 13, read through
#      a private apt configuration under the cache: the machine's own apt setup is not touched; sid's
#      lists name versions its mirror no longer holds), upstream source without Debian's patches, with
#      the build dependencies from the machine's Debian. No PGO or LTO: 3.13.5 took 4 CPU-minutes
#      (17 min of wall time on a host busy with other jobs), once per machine. Debian carries
#      python3.13 (trixie) but no longer any python3.12, so for 3.12 this step says so and fails.
#      No other source is tried: this kind of machine reaches only the package registries (no
#      python.org, no GitHub), and the prebuilt interpreters found on npm fetch their binary from
#      GitHub at install time.
set -euo pipefail
CACHE=${SCOPEGATE_PYTHONS:-$HOME/.cache/scopegate/pythons}
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(3.12 3.13)

runs_as() {  # $1: interpreter, $2: X.Y -> true when it runs and is that version
  [ -x "$1" ] && [ "$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$2" ]
}

find_python() {  # $1: X.Y -> prints a path or returns 1
  local version=$1 var candidate
  var="SCOPEGATE_PYTHON_${version//./_}"
  if [ -n "${!var:-}" ]; then
    runs_as "${!var}" "$version" && { echo "${!var}"; return 0; }
    echo "python-versions: $var=${!var} is not a Python $version" >&2
    return 1
  fi
  candidate=$(command -v "python$version" 2>/dev/null || true)
  if [ -n "$candidate" ] && runs_as "$candidate" "$version"; then
    # A pyenv shim runs the interpreter of its own folder: print that, not the shim.
    "$candidate" -c 'import sys; print(sys.executable)'
    return 0
  fi
  # Newest patch release first (sort -V), pyenv's folder then the cache.
  for candidate in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$version".* 2>/dev/null | sort -rV) "$CACHE/$version"; do
    if runs_as "$candidate/bin/python$version" "$version"; then
      echo "$candidate/bin/python$version"
      return 0
    fi
  done
  return 1
}

build_from_debian_source() {  # $1: X.Y -> builds into $CACHE/X.Y, or returns 1
  local version=$1 apt="$CACHE/apt" work="$CACHE/build-$1" prefix="$CACHE/$1"
  mkdir -p "$apt/lists/partial" "$apt/archives/partial"
  printf 'deb-src http://deb.debian.org/debian trixie main\n' >"$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives")
  apt-get "${opts[@]}" -qq update >&2 || return 1
  if ! apt-cache "${opts[@]}" showsrc "python$version" 2>/dev/null | grep -q "^Package: python$version\$"; then
    echo "python-versions: Debian has no source package python$version (and nothing else reachable has $version)" >&2
    return 1
  fi
  echo "python-versions: building Python $version from Debian's source package into $prefix (once)" >&2
  # What the unit layer needs of the standard library: ssl, ctypes (cffi), zlib, bz2, lzma, sqlite3, uuid.
  local deps=(build-essential pkg-config dpkg-dev libssl-dev libffi-dev zlib1g-dev libbz2-dev liblzma-dev
    libsqlite3-dev uuid-dev)
  if ! dpkg -s "${deps[@]}" >/dev/null 2>&1; then
    { apt-get update -qq && apt-get install -y -qq "${deps[@]}" >/dev/null; } >&2 || return 1
  fi
  rm -rf "$work" && mkdir -p "$work"
  (cd "$work" && apt-get "${opts[@]}" -qq source --download-only "python$version" >&2 && dpkg-source --no-check -x --skip-patches ./*.dsc src >/dev/null) || return 1
  (
    cd "$work/src"
    ./configure --prefix="$prefix" >"$work/configure.log" 2>&1
    make -j"$(nproc)" >"$work/make.log" 2>&1
    make altinstall >"$work/install.log" 2>&1
  ) || { echo "python-versions: the build failed; logs in $work" >&2; return 1; }
  rm -rf "$work"
  runs_as "$prefix/bin/python$version" "$version"
}

missing=()
for version in "${VERSIONS[@]}"; do
  if path=$(find_python "$version"); then
    echo "$path"
  elif build_from_debian_source "$version" && path=$(find_python "$version"); then
    echo "$path"
  else
    missing+=("$version")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "python-versions: no interpreter for Python ${missing[*]}" >&2
  exit 1
fi
