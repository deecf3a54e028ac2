#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when missing: OpenSSL's headers and
# pkg-config (the COpenSSL system library, TLS on the loop), the openssl command (test
# certificates), jemalloc (the package benchmarks' malloc counters), curl (tests reach
# `stampede serve --rest` over https with it), nginx (the TLS interop tests start their own
# nginx on loopback, each with its own config).
set -euo pipefail
need=()
for p in libssl-dev pkg-config openssl libjemalloc-dev curl nginx; do
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
# Should a system nginx run anyway (started by systemd, or by an install before this script),
# stop it: the tests do not use it, and it would hold port 80.
if [ -s /run/nginx.pid ] && kill -0 "$(cat /run/nginx.pid)" 2> /dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  if command -v systemctl > /dev/null 2>&1 && systemctl is-active --quiet nginx 2> /dev/null; then
    $SUDO systemctl disable --now nginx > /dev/null 2>&1 || true
  else
    $SUDO nginx -s quit 2> /dev/null || $SUDO kill "$(cat /run/nginx.pid)" 2> /dev/null || true
  fi
fi
