#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when missing: OpenSSL's headers and
# pkg-config (the COpenSSL system library, TLS on the loop), the openssl command (test
# certificates), jemalloc (the package benchmarks' malloc counters), curl (tests reach
# `stampede serve --rest` over https with it).
set -euo pipefail
need=()
for p in libssl-dev pkg-config openssl libjemalloc-dev curl; do
  dpkg -s "$p" > /dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}" > /dev/null
fi
