#!/usr/bin/env bash
# Builds the scenario libFuzzer binary (Fuzz/scenario: Yams, the scenario loader and the engine's
# run plan, all compiled with -sanitize=fuzzer,address) and links it as .build-fuzz/fuzz-scenario.
#
#   Fuzz/build-scenario.sh   # then: Fuzz/run.sh scenario 600
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${STAMPEDE_FUZZ_BUILD_DIR:-$root/.build-fuzz}"
scratch="$root/.build-fuzz-scenario"
mkdir -p "$out"
# SwiftPM can keep planning from a stale list of the root package's files (a path dependency
# here); without its plan it looks at the folders again.
rm -f "$scratch/release.yaml" "$scratch/release/description.json"
swift build -c release --package-path "$root/Fuzz/scenario" --scratch-path "$scratch" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -gline-tables-only \
    -Xcc -fsanitize=fuzzer-no-link,address --product ScenarioFuzz
ln -sfn "$scratch/release/ScenarioFuzz" "$out/fuzz-scenario"
echo "fuzz binary: $out/fuzz-scenario"
