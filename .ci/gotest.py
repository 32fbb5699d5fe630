#!/usr/bin/env python3
"""Runs `go test -json` over packages in lanes and prints it as CI's log
shows `go test -v`: every line but the RUN/PAUSE/CONT/NAME headers and the
PASS lines of passing tests, so every skip with its reason and every figure
a test logs stays in the log.

    gotest.py --lanes N --order "PATH... ... PATH..." [--skip-file F]
              [--ran-in-full F --other-names F] [--go-flag FLAG]... PKG...

Each package --order names (its path in the module) is a `go test` of its
own, and the other packages one more, with -p 1, where "..." stands in the
order: at most N run at once, each started when a lane frees, in that
order (longest first). go test's own -p starts the packages in an order of
its own, and a long package started last ran alone for a minute. A package
named but not found (renamed) is tested with the others. A package's
output is printed when its `go test` ends.

With --ran-in-full FILE (the race detector's step), it also writes FILE:
the -skip pattern of the normal step, naming the top-level tests that ran
in full here, so that the normal step runs each test of these packages
once. A test ran in full when it passed with no skip of its own or of a
subtest and no line of internal/testmode's marker ("testmode: reduced:").
A name that also stands in a package outside this run (--other-names, one
per line) is left out: -skip cannot name a package.

Exits 1 when a `go test` failed.
"""
import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import time

MARKER = "testmode: reduced:"
HIDE = re.compile(r"^(=== (RUN|PAUSE|CONT|NAME)|\s*--- PASS:)")
MODULE = "github.com/meteorbench/meteorbench/"

ap = argparse.ArgumentParser()
ap.add_argument("--lanes", type=int, default=2)
ap.add_argument("--order", default="...", help='packages run by a go test of their own, longest first; "..." the others')
ap.add_argument("--go-flag", action="append", default=[], help="a flag for every go test")
ap.add_argument("--skip-file", help="a file holding go test's -skip pattern")
ap.add_argument("--ran-in-full")
ap.add_argument("--other-names")
ap.add_argument("--times", help="a file for every top-level test's seconds, slowest first")
ap.add_argument("packages", nargs="+")
args = ap.parse_args()

flags = ["-json"] + args.go_flag
if args.skip_file:
    with open(args.skip_file) as f:
        skip = f.read().strip()
    if skip:
        flags += ["-skip", skip]
order = args.order.split()
if "..." not in order:
    order.append("...")
named = {p for name in order for p in args.packages if p == name or p.endswith("/" + name)}
rest = [p for p in args.packages if p not in named]
groups = []  # each a go test's packages, in the order they start
for name in order:
    if name == "...":
        groups += [rest] if rest else []
    else:
        groups += [[p] for p in args.packages if p == name or p.endswith("/" + name)]

t0 = time.monotonic()


def short(pkg):
    return pkg.split(MODULE)[-1]


def run(group):
    # The others one package at a time: one lane.
    cmd = ["go", "test"] + flags + (["-p", "1"] if len(group) > 1 else []) + group
    start = time.monotonic() - t0
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return group, start, time.monotonic() - t0, p.returncode, p.stdout


passed, reduced = set(), set()
elapsed = {}  # (top-level test, package): seconds, for the slowest list
failed = False
with concurrent.futures.ThreadPoolExecutor(max_workers=args.lanes) as pool:
    futures = [pool.submit(run, g) for g in groups]
    for fut in concurrent.futures.as_completed(futures):
        group, start, end, rc, out = fut.result()
        names = " ".join(short(p) for p in group)
        print(f"-- go test {names}: from {start:.0f}s to {end:.0f}s, exit {rc}")
        failed = failed or rc != 0
        for line in out.splitlines(keepends=True):
            try:
                ev = json.loads(line)
            except ValueError:
                sys.stdout.write(line)  # go's own messages (a build failure)
                continue
            text = ev.get("Output")
            if text is not None and not HIDE.match(text):
                sys.stdout.write(text)
            test = ev.get("Test")
            if not test:
                continue
            top = test.split("/")[0]
            action = ev.get("Action")
            if action == "skip" or (action == "output" and MARKER in (text or "")):
                reduced.add(top)
            elif action == "pass" and test == top:
                passed.add(top)
            if action in ("pass", "fail") and test == top:
                elapsed[(top, short(ev.get("Package", "")))] = ev.get("Elapsed", 0)
        sys.stdout.flush()

ranked = sorted(elapsed.items(), key=lambda kv: -kv[1])
slowest = ranked[:15]
if args.times:
    with open(args.times, "w") as f:
        f.writelines(f"{secs:.2f}\t{pkg}\t{name}\n" for (name, pkg), secs in ranked)
print("slowest tests: " + ", ".join(f"{name} {secs:.1f}s ({pkg})" for (name, pkg), secs in slowest))

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
sys.exit(1 if failed else 0)
