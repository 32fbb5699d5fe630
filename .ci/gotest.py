#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints it as CI's log shows `go test -v`:
every line but the RUN/PAUSE/CONT/NAME headers and the PASS lines of
passing tests, so every skip with its reason and every figure a test logs
stays in the log.

With --ran-in-full FILE (the race detector's step), it also writes FILE:
the -skip pattern of the normal step, naming the top-level tests that ran
in full here, so that the normal step runs each test of these packages
once. A test ran in full when it passed with no skip of its own or of a
subtest and no line of internal/testmode's marker ("testmode: reduced:").
A name that also stands in a package outside this run (--other-names, one
per line) is left out: -skip cannot name a package.
"""
import argparse
import json
import re
import sys

MARKER = "testmode: reduced:"
HIDE = re.compile(r"^(=== (RUN|PAUSE|CONT|NAME)|\s*--- PASS:)")

ap = argparse.ArgumentParser()
ap.add_argument("--ran-in-full")
ap.add_argument("--other-names")
args = ap.parse_args()

passed, reduced = set(), set()
elapsed = {}  # (top-level test, package): seconds, for the slowest list
for line in sys.stdin:
    try:
        ev = json.loads(line)
    except ValueError:
        sys.stdout.write(line)  # go's own messages (a build failure)
        continue
    out = ev.get("Output")
    if out is not None and not HIDE.match(out):
        sys.stdout.write(out)
    test = ev.get("Test")
    if not test:
        continue
    top = test.split("/")[0]
    action = ev.get("Action")
    if action == "skip" or (action == "output" and MARKER in (out or "")):
        reduced.add(top)
    elif action == "pass" and test == top:
        passed.add(top)
    if action in ("pass", "fail") and test == top:
        elapsed[(top, ev.get("Package", "").split("meteorbench/meteorbench/")[-1])] = ev.get("Elapsed", 0)
slowest = sorted(elapsed.items(), key=lambda kv: -kv[1])[:12]
print("slowest tests: " + ", ".join(f"{name} {secs:.1f}s ({pkg})" for (name, pkg), secs in slowest))
sys.stdout.flush()

if args.ran_in_full:
    other = set()
    if args.other_names:
        with open(args.other_names) as f:
            other = {l.strip() for l in f if l.strip()}
    full = sorted(passed - reduced - other)
    with open(args.ran_in_full, "w") as f:
        f.write("^(" + "|".join(map(re.escape, full)) + ")$" if full else "")
    print(f"ran in full under the race detector (the normal step skips them): {len(full)} tests; "
          f"reduced or skipped here (the normal step runs them): {len(reduced)}")
