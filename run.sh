#!/usr/bin/env bash
# One entry point for people and CI:
#   ./run.sh serve [arco serve options]   set up what is missing, then serve ./warehouse on 127.0.0.1:8181
#   ./run.sh test [pytest options]        set up everything the tests need (emulators included), then run them all
#   ./run.sh setup                        only set up (.venv with the locked dependencies, `arco` in .venv/bin)
#   ./run.sh check-install                check that what `setup` installs is enough to serve and run the pipeline
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PY="$VENV/bin/python"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

find_python() {
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      echo "$candidate"; return
    fi
  done
  echo "Arco needs Python 3.11 (python3.11 on PATH); install it and run this again." >&2
  exit 1
}

# Install a lock file into the venv unless the same lock (and pyproject) was installed already.
install_locked() {
  local lock=$1 stamp="$VENV/.installed-$(basename "$1")"
  local want
  want=$(cat "$lock" pyproject.toml | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return; fi
  say "installing $lock into $VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check -r "$lock"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
}

# Install packages whose own version caps conflict with the locked stack, without their dependencies (the file says
# why each is there); once per content of the file.
install_unpinned_deps() {
  local list=$1 stamp="$VENV/.installed-$(basename "$1")"
  local want
  want=$(sha256sum "$list" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return; fi
  say "installing $list into $VENV (without dependencies)"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps -r "$list"
  echo "$want" > "$stamp"
}

setup_runtime() {
  if [ ! -x "$PY" ]; then
    say "creating $VENV"
    "$(find_python)" -m venv "$VENV"
    "$PY" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=24" "setuptools>=68" wheel
  fi
  install_locked requirements.lock
  compile_package
}

# Byte-compile Arco's own modules, which pip does not do for an editable install. Where PYTHONDONTWRITEBYTECODE is set
# (as in many container images) Python would otherwise compile them from source at every server start and CLI call:
# a quarter of a server's start. Only files changed since their last compilation are compiled again.
compile_package() {
  "$PY" -m compileall -q -j 0 src/arco >/dev/null ||
    say "note: src/arco could not be byte-compiled (not writable?); Arco still runs, its starts are slower"
}

ensure_java() {
  # Spark 3.5 runs on Java 17, which this kind of machine has; install it from Debian where it is missing.
  if command -v java >/dev/null 2>&1; then return; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing Java 17 for Spark"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  else
    echo "Spark needs Java 17: install a JDK/JRE 17 and run this again." >&2
    exit 1
  fi
}

setup_tests() {
  setup_runtime
  install_locked requirements-test.lock
  install_unpinned_deps requirements-recipient.txt
  ensure_java
  bash scripts/install-emulators.sh
}

cmd=${1:-help}
[ $# -gt 0 ] && shift
case "$cmd" in
  setup)
    setup_runtime
    say "ready: .venv/bin/arco --help" ;;
  serve)
    setup_runtime
    exec "$VENV/bin/arco" serve "$@" ;;
  check-install)
    setup_runtime
    ensure_java
    exec "$PY" scripts/check_install.py "$@" ;;
  test)
    setup_tests
    export SPARK_LOCAL_IP=127.0.0.1
    # Test files spread over workers whole (--dist loadfile), so each module's servers start once.
    exec "$PY" -m pytest -n "${ARCO_TEST_WORKERS:-2}" --dist loadfile "$@" ;;
  *)
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 2 ;;
esac
