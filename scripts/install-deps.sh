#!/usr/bin/env bash
# Installs the Debian packages deepinfer needs to build and test. Idempotent:
# installs only what is missing, so a second run is a no-op.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config      # build
  clang libclang-rt-14-dev              # fuzz targets (libFuzzer), the thread-safety analysis
  clang-format clang-tidy               # scripts/lint.sh
  googletest libgtest-dev               # unit tests
  nlohmann-json3-dev                    # config.json, tokenizer.json, safetensors headers
  libpcre2-dev                          # Unicode pre-tokenizer regexes
  zlib1g-dev                            # tokenizer.json.gz
  python3 python3-numpy                 # independent NumPy reference in tests/reference
  python3-jsonschema                    # independent validator for structured-output tests
  python3-jinja2                        # independent chat-template renderer (tests/chat)
  libboost-dev                          # Boost.Beast/Asio: the HTTP server and bench-serve client
  python3-sentencepiece                 # independent tokenizer for tests/server/endpoints_test.py
  prometheus                            # promtool: tests/server/metrics_test.py checks /metrics
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Node.js + npm run the official `openai` client against the server in the
# tests (the package itself is installed by tests/server/ into a cache folder).
if ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing nodejs npm" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
