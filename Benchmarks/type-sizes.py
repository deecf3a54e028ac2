#!/usr/bin/env python3
"""The largest types in Sources/: lines of each type's declaration plus its extensions, and the
number of stored properties of its main declaration. Counts braces (strings with braces are
rare in our sources and only blur a count by a line or two).

    Benchmarks/type-sizes.py [ROOT] [N]     # N largest, default 12
"""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
decl = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|internal|private|fileprivate|final|open|indirect)\s+)*'
                  r'(class|struct|enum|actor|extension)\s+([A-Za-z_][A-Za-z0-9_.]*)')
stored = re.compile(r'^\s*(?:@\w+\s+)*(?:(?:public|internal|private|fileprivate|unowned\(unsafe\)|weak|lazy|nonisolated\(unsafe\))\s+)*'
                    r'(?:private\(set\)\s+|public\s+private\(set\)\s+|internal\(set\)\s+)?(var|let)\s+\w+')
sizes, fields, files = {}, {}, {}
for d, _, names in os.walk(os.path.join(root, "Sources")):
    for n in names:
        if not n.endswith(".swift"):
            continue
        lines = open(os.path.join(d, n), encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            m = decl.match(lines[i])
            if not m or "{" not in "".join(lines[i:i + 3]):
                i += 1
                continue
            kind, name = m.group(1), m.group(2).split("<")[0].split(".")[0]
            depth, j, count = 0, i, 0
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                if kind != "extension" and depth == 1 and stored.match(lines[j]) and "{" not in lines[j].split("=")[0]:
                    count += 1
                j += 1
                if depth <= 0 and j > i:
                    break
            sizes[name] = sizes.get(name, 0) + (j - i)
            if kind != "extension":
                fields[name] = fields.get(name, 0) + count
            files.setdefault(name, set()).add(n)
            # Nested types count inside their parent; top-level only.
            i = j if lines[i][0:1] not in " \t" else i + 1
for name, n in sorted(sizes.items(), key=lambda kv: -kv[1])[:top]:
    print(f"{n:6d} lines  {fields.get(name, 0):3d} stored  {name}  ({', '.join(sorted(files[name]))})")
