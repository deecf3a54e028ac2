#!/usr/bin/env python3
"""Helpers of SchemaTests (Tests/StampedeEngineTests/SchemaTests.swift), in venv `schema`.

    schema_check.py cases
        Prints, as one JSON list, the broken scenarios Tests/broken-input/broken_inputs.py
        generates: [{"id": ..., "yaml": ...}, ...] (so both tests throw the same inputs).

    schema_check.py validate SCHEMA INPUT
        INPUT holds one JSON object per line, {"id": ..., "doc": <the scenario as JSON>}. Checks
        SCHEMA against the draft 2020-12 meta-schema, then prints one line per input:
        {"id": ..., "valid": true|false, "error": "<path>: <message>"}.

The YAML is turned into JSON by the test, with the loader's own YAML library, so the schema
judges exactly the values the loader reads (YAML 1.1 tags: `off` is false, `1e-10` a float).
"""
import json
import os
import sys


def cases():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "broken-input"))
    import broken_inputs  # noqa: E402 (its CASES and FILES are built at import, standard library only)

    out = [{"id": "case %d (%s: %s)" % (i, field, value), "yaml": broken_inputs.render(base, field, value)}
           for i, (base, field, value, _) in enumerate(broken_inputs.CASES)]
    out += [{"id": "file %s" % name, "yaml": text} for name, text, _ in broken_inputs.FILES]
    json.dump(out, sys.stdout)


def validate(schema_path, input_path):
    import jsonschema

    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    with open(input_path, encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            error = jsonschema.exceptions.best_match(validator.iter_errors(item["doc"]))
            text = None
            if error is not None:
                text = "%s: %s" % ("/".join(str(p) for p in error.absolute_path) or "(top)", error.message[:300])
            print(json.dumps({"id": item["id"], "valid": error is None, "error": text}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["cases"]:
        cases()
    elif sys.argv[1:2] == ["validate"] and len(sys.argv) == 4:
        validate(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
