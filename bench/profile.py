#!/usr/bin/env python3
"""bench/profile.py: where the time of one iwperf run goes, both sides.

  bench/profile.py [--bin DIR] [--callgrind client|server] [--perf-record]
                   -- IWPERF_CLIENT_ARGS...
  e.g. bench/profile.py -- -t write -S 1M -n 2000 --crc=on
       bench/profile.py -- -t write -S 1M -n 2000 --tcp
       bench/profile.py --callgrind client -- -t lat -S 8 -n 20000

Runs `iwperf -s --once` and the client under `perf stat` (software events:
task-clock, context switches, raw_syscalls:sys_enter; these machines have
no hardware counters) and prints per side: CPU seconds per 10^9 bytes,
syscalls per MiB (per round trip for lat), context switches per MiB.
--callgrind SIDE runs that side under valgrind's callgrind instead (stable
instruction counts on a noisy machine) and prints its top functions and
instructions per byte (per round trip for lat). --perf-record samples both
sides (cpu-clock) and prints the top symbols. Use a fixed -n, not -D.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def free_port_pair():
    for _ in range(100):
        with socket.socket() as s1, socket.socket() as s2:
            s1.bind(("127.0.0.1", 0))
            p = s1.getsockname()[1]
            try:
                s2.bind(("127.0.0.1", p + 1))
                return p
            except OSError:
                continue
    sys.exit("profile: no free ports")


def wait_announced(path, proc, timeout=20):
    """True once the server (stderr in `path`) says "listening on": it
    does when both its ports are open (tools/tool_common.c)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        with open(path, errors="replace") as f:
            if ": listening on " in f.read():
                return True
        time.sleep(0.01)
    return False


def perf_stat_file(path):
    """{event: count} from `perf stat -x,` output."""
    ev = {}
    with open(path) as f:
        for line in f:
            fl = line.strip().split(",")
            if len(fl) >= 3 and fl[0] and not line.startswith("#"):
                try:
                    ev[fl[2]] = float(fl[0])
                except ValueError:
                    pass
    return ev


def wrap(kind, side, tmp, cmd):
    if kind == "stat":
        return ["perf", "stat", "-x,", "-o", os.path.join(tmp, f"{side}.stat"), "-e",
                "task-clock,context-switches,raw_syscalls:sys_enter", "--", *cmd]
    if kind == "record":
        return ["perf", "record", "-q", "-e", "cpu-clock", "-F", "2999", "-o",
                os.path.join(tmp, f"{side}.data"), "--", *cmd]
    if kind == "callgrind":
        return ["valgrind", "--tool=callgrind", "--quiet", f"--callgrind-out-file={tmp}/{side}.cg", *cmd]
    return cmd


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=None, help="directory with iwperf (default build/bench/release/bin, "
                   "else build/bin)")
    p.add_argument("--callgrind", choices=("client", "server"))
    p.add_argument("--perf-record", action="store_true")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("client_args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    args = [x for x in a.client_args if x != "--"]
    if not args:
        p.error("give the iwperf client arguments after --")
    bindir = a.bin
    if not bindir:
        for c in (os.path.join(SRC, "build", "bench", "release", "bin"), os.path.join(SRC, "build", "bin")):
            if os.access(os.path.join(c, "iwperf"), os.X_OK):
                bindir = c
                break
    iwperf = os.path.join(bindir or "", "iwperf")
    if not os.access(iwperf, os.X_OK):
        sys.exit("profile: no iwperf (give --bin)")
    lat = "lat" in args
    port = free_port_pair()
    tmp = tempfile.mkdtemp(prefix="iwprof.")
    kinds = {"server": "stat", "client": "stat"}
    if a.perf_record:
        kinds = {"server": "record", "client": "record"}
    if a.callgrind:
        kinds[a.callgrind] = "callgrind"
        other = "client" if a.callgrind == "server" else "server"
        kinds[other] = "none"
    timeout = ["--timeout", "120"] if a.callgrind else []
    srv = subprocess.Popen(wrap(kinds["server"], "server", tmp,
                                [iwperf, "-s", "-a", "127.0.0.1", "-p", str(port), "--once", *timeout]),
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "server.err"), "w"))
    if not wait_announced(os.path.join(tmp, "server.err"), srv, 60):
        srv.kill()
        sys.exit("profile: server did not start")
    cli = subprocess.run(wrap(kinds["client"], "client", tmp,
                              [iwperf, "-c", "127.0.0.1", "-p", str(port), "--json", *timeout, *args]),
                         stdout=subprocess.PIPE, text=True)
    try:
        srv.wait(timeout=120)
    except subprocess.TimeoutExpired:
        srv.kill()
    rows = [json.loads(x) for x in cli.stdout.splitlines() if x.startswith("{")]
    if cli.returncode != 0 or not rows:
        sys.exit(f"profile: client failed ({cli.returncode})")
    nbytes = sum(r["bytes"] * r["iterations"] for r in rows)
    trips = sum(r["iterations"] for r in rows)
    for r in rows:
        print(json.dumps(r))
    unit, per = ("round trip", trips) if lat else ("MiB", nbytes / (1 << 20))
    if kinds["client"] == "stat":
        print(f"{'side':7} {'CPU s':>8} {'CPU s/GB':>9} {'syscalls/' + unit:>20} {'ctxsw/' + unit:>16}")
        for side in ("client", "server"):
            ev = perf_stat_file(os.path.join(tmp, f"{side}.stat"))
            cpu = ev.get("task-clock", 0) / 1e3  # msec
            sc = ev.get("raw_syscalls:sys_enter", 0)
            cs = ev.get("context-switches", 0)
            print(f"{side:7} {cpu:8.3f} {cpu / (nbytes / 1e9):9.3f} {sc / per:20.2f} {cs / per:16.2f}")
    if a.perf_record:
        for side in ("client", "server"):
            print(f"== {side}: top symbols (cpu-clock samples)")
            r = subprocess.run(["perf", "report", "-i", os.path.join(tmp, f"{side}.data"), "--no-children",
                                "--sort", "dso,symbol", "--stdio", "-g", "none"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            lines = [x for x in r.stdout.splitlines() if "%" in x and not x.startswith("#")]
            print("\n".join(lines[:a.top]))
    if a.callgrind:
        cg = os.path.join(tmp, f"{a.callgrind}.cg")
        r = subprocess.run(["callgrind_annotate", "--inclusive=no", cg], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        m = re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", r.stdout)
        total = int(m.group(1).replace(",", "")) if m else 0
        print(f"== {a.callgrind} under callgrind: {total:,} instructions in all"
              + (f", {total / per:,.0f} per {unit}" if total else ""))
        body = r.stdout.split("file:function", 1)[-1].splitlines()
        print("\n".join(x for x in body[1:a.top + 1] if x.strip()))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
