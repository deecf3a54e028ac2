#!/usr/bin/env bash
# Builds the libFuzzer binary of the codecs and sessions: Sources/StampedeWire,
# Sources/StampedeSession and Fuzz/*.swift compiled as one module with -sanitize=fuzzer,address,
# then one symlink per target (the binary picks its target from the name it runs under; see
# Fuzz/FuzzMain.swift). The session files' `import StampedeWire` is dropped in a copy under the
# output folder, since here both layers are one module.
#
#   Fuzz/build.sh            # -> .build-fuzz/fuzz-<target>
#
# Skips the compile when the sources, flags and compiler are those of the last build (a hash
# in .build-fuzz/stamp), so the test suite can call it every time. Env: SWIFTC (compiler),
# STAMPEDE_FUZZ_BUILD_DIR (output folder).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${STAMPEDE_FUZZ_BUILD_DIR:-$root/.build-fuzz}"
swiftc="${SWIFTC:-swiftc}"
targets=(websocket json-hub msgpack-hub sse http-response http-request http-exchange hub-session websocket-session flow flow-session socketio-server socketio-session)
flags=(-O -gline-tables-only -use-ld=lld -swift-version 6 -sanitize=fuzzer,address -parse-as-library -module-name StampedeFuzz)

cd "$root"
mkdir -p "$out"
rm -rf "$out/session-sources" && mkdir -p "$out/session-sources"
while IFS= read -r f; do
    grep -v '^import StampedeWire$' "$f" > "$out/session-sources/$(basename "$f")"
done < <(find Sources/StampedeSession -name '*.swift')
mapfile -t sources < <({ find Sources/StampedeWire -name '*.swift'; find "$out/session-sources" -name '*.swift'; find Fuzz -maxdepth 1 -name '*.swift'; } | LC_ALL=C sort)
stamp="$({ "$swiftc" --version 2>&1; echo "${flags[*]}"; for f in "${sources[@]}"; do echo "== ${f#"$out"/}"; cat "$f"; done; } | sha256sum | cut -d' ' -f1)"

if [[ -x "$out/stampede-fuzz" && -f "$out/stamp" && "$(cat "$out/stamp")" == "$stamp" ]]; then
    echo "fuzz binary up to date: $out/stampede-fuzz"
else
    echo "building $out/stampede-fuzz (${#sources[@]} files)"
    tmp="$out/stampede-fuzz.tmp.$$"
    trap 'rm -f "$tmp"' EXIT
    if ! "$swiftc" "${flags[@]}" "${sources[@]}" -o "$tmp"; then
        echo "error: building the fuzz binary failed; it needs a Swift toolchain with libFuzzer (swiftc -sanitize=fuzzer)" >&2
        exit 1
    fi
    # Renamed into place, so a fuzzer still running the old binary is not disturbed.
    mv -f "$tmp" "$out/stampede-fuzz"
    echo "$stamp" > "$out/stamp"
fi
for t in "${targets[@]}"; do ln -sfn stampede-fuzz "$out/fuzz-$t"; done
