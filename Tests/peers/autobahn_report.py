#!/usr/bin/env python3
"""Summarise an Autobahn / kosoku fuzzingserver report: DIR/index.json.

usage: autobahn_report.py DIR [AGENT] [--expect-cases N]

AGENT may be left out when the index holds a single agent. --expect-cases N
also fails (exit 1) when the agent has a number of cases other than N: kosoku
writes a report and exits 0 on /updateReports even when the client ran only
some of the cases, so a test should pass the count /getCaseCount gave.

index.json layout (kosoku 0.1.0 and autobahntestsuite alike):
  {"<agent>": {"<case id>": {"behavior": "OK", "behaviorClose": "OK",
                             "remoteCloseCode": 1000, "duration": 2,
                             "reportfile": "<agent>_case_1_1_1.json"}, ...}}

stdout: one JSON line
  {"agent":..., "cases":N, "OK":a, "NON-STRICT":b, "INFORMATIONAL":c,
   "FAILED":d, "UNIMPLEMENTED":e, "failed_cases":[...], ...}
The five counts are of `behavior`. A case is in failed_cases when its
`behavior` or its `behaviorClose` is anything but OK / NON-STRICT /
INFORMATIONAL (so FAILED, UNIMPLEMENTED, kosoku's ERROR, and the close
verdicts FAILED, WRONG CODE, UNCLEAN, FAILED BY CLIENT) -- the same rule as
kosoku's own pass/fail. `behaviorClose` counts are in "behaviorClose";
`behavior` values outside the five (e.g. ERROR) are counted in "other".
exit: 0 no failed case; 1 some failed case, no case at all, or a case count
other than --expect-cases; 2 bad input (no DIR/index.json, unknown AGENT).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter

PASSING = {"OK", "NON-STRICT", "INFORMATIONAL"}
BEHAVIORS = ("OK", "NON-STRICT", "INFORMATIONAL", "FAILED", "UNIMPLEMENTED")


def case_key(case_id: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"[.]", case_id)]


def main(argv: list[str]) -> int:
    argv = list(argv)
    expect_cases = None
    if "--expect-cases" in argv:
        at = argv.index("--expect-cases")
        try:
            expect_cases = int(argv[at + 1])
        except (IndexError, ValueError):
            print("autobahn_report: --expect-cases needs an integer", file=sys.stderr)
            return 2
        del argv[at:at + 2]
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    outdir = argv[1]
    path = os.path.join(outdir, "index.json")
    try:
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"autobahn_report: cannot read {path}: {e}", file=sys.stderr)
        return 2
    if not isinstance(index, dict) or not index:
        print(f"autobahn_report: {path} has no agent", file=sys.stderr)
        return 2
    if len(argv) == 3:
        agent = argv[2]
    elif len(index) == 1:
        agent = next(iter(index))
    else:
        print(f"autobahn_report: several agents, name one of {sorted(index)}", file=sys.stderr)
        return 2
    if agent not in index:
        print(f"autobahn_report: agent {agent!r} not in {path}; agents: {sorted(index)}",
              file=sys.stderr)
        return 2

    cases = index[agent]
    counts = Counter()
    close_counts = Counter()
    other = Counter()
    failed: list[str] = []
    for case_id in sorted(cases, key=case_key):
        entry = cases[case_id]
        behavior = entry.get("behavior")
        behavior_close = entry.get("behaviorClose")
        if behavior in BEHAVIORS:
            counts[behavior] += 1
        else:
            other[str(behavior)] += 1
        close_counts[str(behavior_close)] += 1
        if behavior not in PASSING or behavior_close not in PASSING:
            failed.append(case_id)

    summary = {
        "agent": agent,
        "cases": len(cases),
        **{b: counts[b] for b in BEHAVIORS},
        "failed_cases": failed,
        "behaviorClose": dict(sorted(close_counts.items())),
        "other": dict(sorted(other.items())),
    }
    count_ok = expect_cases is None or expect_cases == len(cases)
    if expect_cases is not None:
        summary["expected_cases"] = expect_cases
    print(json.dumps(summary, separators=(",", ":")), flush=True)
    if not count_ok:
        print(f"autobahn_report: {len(cases)} cases in the report, expected {expect_cases}",
              file=sys.stderr)
    return 1 if failed or not cases or not count_ok else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
