#!/usr/bin/env bash
# Installs the Debian packages Stampede needs, when missing. Always (the build and the demo):
# OpenSSL's headers and pkg-config (the COpenSSL system library, TLS on the loop), the openssl
# command, jemalloc (the package benchmarks' malloc counters), zlib's headers (the CZlib system
# library: .hlog files). With `--tests` also: curl (tests reach `stampede serve --rest` over
# https with it), nginx (the TLS interop tests start their own nginx on loopback ports of their
# own, each with its own config), and HdrHistogram's Java library with a headless JRE (the .hlog
# interop tests run its HistogramLogProcessor), and prometheus (promtool checks the live metrics
# endpoint's output, and the live-metrics test starts its own Prometheus server on a loopback
# port with its own config and data folder; the package's own services are not started, see
# policy-rc.d below), and chromium (the HTML report's browser test and scripts/screenshots.sh
# render report.html in headless Chromium), and rabbitmq-server (the STOMP-over-WebSocket test,
# Tests/peers/rabbitmq_stomp.sh, starts a private broker node on loopback ports of its own with
# its own data folder; the package's own service is not started, see policy-rc.d below).
# With package names instead, only those (a benchmark that needs one of them, e.g. nginx).
# Usage: scripts/ensure-packages.sh [--tests | PACKAGE…]
set -euo pipefail
packages=(libssl-dev pkg-config openssl libjemalloc-dev zlib1g-dev)
case "${1:-}" in
  "") ;;
  --tests) packages+=(curl nginx libhdrhistogram-java default-jre-headless prometheus chromium rabbitmq-server) ;;
  *) packages=("$@") ;;
esac
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
  # The rabbitmq-server package enables its service (and Erlang's epmd on port 4369) for the next
  # boot: the STOMP test starts its own private node and needs neither.
  if [[ " ${need[*]} " == *" rabbitmq-server "* ]] && command -v systemctl > /dev/null && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now rabbitmq-server epmd.socket epmd > /dev/null 2>&1 || true
  fi
  # The prometheus package enables its server (port 9090) and, by recommendation, the node
  # exporter (9100) on every interface for the next boot: the tests start their own Prometheus
  # and need neither, so they are disabled and stopped where systemd runs.
  if [[ " ${need[*]} " == *" prometheus "* ]] && command -v systemctl > /dev/null && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now prometheus prometheus-node-exporter > /dev/null 2>&1 || true
  fi
fi
