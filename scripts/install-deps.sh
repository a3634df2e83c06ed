#!/usr/bin/env bash
# Installs the Debian packages MoonMQ builds, tests and benchmarks with, when any is missing.
# Idempotent: a machine that already has them all does nothing (and needs no network).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libasio-dev libcpp-httplib-dev rapidjson-dev libfmt-dev catch2 libssl-dev
  libspdlog-dev libcli11-dev prometheus-cpp-dev
  openssl curl python3 prometheus systemd
  chromium chromium-driver python3-selenium python3-pil
  python3-pulp coinor-cbc
  iproute2 nftables
  clang libclang-rt-14-dev
  kcat python3-confluent-kafka python3-kafka librdkafka-dev
  zlib1g-dev libzstd-dev liblz4-dev libsnappy-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Node.js and npm run kafkajs in the e2e tests. A machine may have them from elsewhere than Debian's packages;
# whichever `node` and `npm` it has will do.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# kafkajs, at the version test/e2e/kafka/package.json names, into that folder (no lock file: it has no dependencies).
clients="$(cd "$(dirname "$0")/../test/e2e/kafka" && pwd)"
want=$(node -p "require('$clients/package.json').dependencies.kafkajs")
have=$(node -p "try { require('$clients/node_modules/kafkajs/package.json').version } catch (e) { '' }")
if [ "$want" != "$have" ]; then
  echo "install-deps: installing kafkajs $want into test/e2e/kafka"
  (cd "$clients" && npm install --no-package-lock --no-audit --no-fund --loglevel=error)
fi
