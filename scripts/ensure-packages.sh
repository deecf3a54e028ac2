#!/usr/bin/env bash
# Installs the Debian packages Stampede needs, when missing. Always (the build and the demo):
# OpenSSL's headers and pkg-config (the COpenSSL system library, TLS on the loop), the openssl
# command, jemalloc (the package benchmarks' malloc counters), zlib's headers (the CZlib system
# library: .hlog files). With `--tests` also: curl (tests reach `stampede serve --rest` over
# https with it), nginx (the TLS interop tests start their own nginx on loopback ports of their
# own, each with its own config), and HdrHistogram's Java library with a headless JRE (the .hlog
# interop tests run its HistogramLogProcessor).
# Usage: scripts/ensure-packages.sh [--tests]
set -euo pipefail
packages=(libssl-dev pkg-config openssl libjemalloc-dev zlib1g-dev)
[ "${1:-}" != --tests ] || packages+=(curl nginx libhdrhistogram-java default-jre-headless chromium)
need=()
for p in "${packages[@]}"; do
  dpkg -s "$p" > /dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  # A package's postinst must not start a system service (nginx would listen on port 80):
  # Debian's policy-rc.d hook, answering 101 (action forbidden), prevents it while we install.
  policy=/usr/sbin/policy-rc.d
  made_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" > /dev/null
    $SUDO chmod 755 "$policy"
    made_policy=1
  fi
  status=0
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" > /dev/null; } || status=$?
  [ -z "$made_policy" ] || $SUDO rm -f "$policy"
  [ $status = 0 ] || exit $status
fi
