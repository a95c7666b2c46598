"""bench/run's iperf part: issue 14's acceptance rows against baselines
from outside the project, on loopback, alternating in every round like the
other parts (odd rounds reverse each group).

Baselines:
  - iperf3 (Debian package iperf3), one stream, `-l 1M` and `-l 4K`:
    the outside TCP bandwidth baseline (iwperf --tcp's NODELAY writes are
    a weak baseline, docs/bench.md); iwperf --tcp runs beside it and the
    ratios against both are reported;
  - `iwperf --tcp -t lat -S 8`: a blocking-socket TCP ping-pong, the
    latency baseline.
Rows (issue 14): WRITE / SEND / READ 1 MiB vs iperf3 -l 1M; 4 KiB WRITE
and SEND message rate vs iperf3 -l 4K (same size, so the rate ratio is
the bandwidth ratio); 8-byte latency vs TCP ping-pong; CRC on vs off at
4 KiB and 1 MiB; user-space instructions per small message per side
(callgrind, skipped in sanitizer builds: valgrind cannot run them).
Also measured: verified placement (IWARP_VERIFIED_PLACEMENT=1) against the
default at 4 KiB, 64 KiB and 1 MiB WRITE, and 8-byte latency with a
blocking progress loop with and without busy polling
(IWARP_BUSY_POLL_US).
"""

import json
import os
import re
import signal
import socket
import shutil
import subprocess
import sys
import tempfile
import time
from bench_stats import median as _median  # noqa: E402

KIB, MIB = 1024, 1024 * 1024
BUSY_POLL_US = 50
CG_ITERS, CG_ITERS_QUICK = (500, 2500), (50, 250)
INSN_BUDGET = 1000


def _log(msg):
    print(f"bench: iperf: {msg}", flush=True, file=sys.stderr)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port):
    """True once something listens on 127.0.0.1:port (/proc/net/tcp)."""
    want = f":{port:04X}"
    try:
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                x = line.split()
                if len(x) > 3 and x[1].endswith(want) and x[3] == "0A":
                    return True
    except OSError:
        pass
    return False


def _size_arg(n):
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB}M"
    if n >= KIB and n % KIB == 0:
        return f"{n // KIB}K"
    return str(n)


def sanitizer_build(bindir):
    """True when bindir's tree was configured with IWARP_SANITIZE=ON (or
    iwperf links an ASan runtime): valgrind cannot run those binaries."""
    try:
        with open(os.path.join(os.path.dirname(bindir), "CMakeCache.txt")) as f:
            if re.search(r"^IWARP_SANITIZE:BOOL=(ON|1|TRUE)$", f.read(), re.M | re.I):
                return True
    except OSError:
        pass
    r = subprocess.run(["ldd", os.path.join(bindir, "iwperf")], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return "libasan" in r.stdout


# Each job: (key, kind, args). kind "iperf3" runs iperf3 with -l SIZE;
# kind "iwperf" runs the iwperf client with args (env in the key's spec).
def _jobs():
    """Groups of jobs that run next to each other; a job is
    (key, kind, test, size, extra args, env)."""
    vp = {"IWARP_VERIFIED_PLACEMENT": "1"}
    bp = {"IWARP_BUSY_POLL_US": str(BUSY_POLL_US)}
    return [
        [("iperf3 1M", "iperf3", None, MIB, [], None),
         ("tcp write 1M", "iwperf", "write", MIB, ["--tcp"], None),
         ("write 1M", "iwperf", "write", MIB, ["--crc=on"], None),
         ("write 1M off", "iwperf", "write", MIB, ["--crc=off"], None),
         ("send 1M", "iwperf", "send", MIB, ["--crc=on"], None),
         ("read 1M", "iwperf", "read", MIB, ["--crc=on"], None)],
        [("iperf3 4K", "iperf3", None, 4 * KIB, [], None),
         ("tcp write 4K", "iwperf", "write", 4 * KIB, ["--tcp"], None),
         ("write 4K", "iwperf", "write", 4 * KIB, ["--crc=on"], None),
         ("write 4K off", "iwperf", "write", 4 * KIB, ["--crc=off"], None),
         ("send 4K", "iwperf", "send", 4 * KIB, ["--crc=on"], None)],
        [("tcp lat 8", "iwperf", "lat", 8, ["--tcp"], None),
         ("lat 8", "iwperf", "lat", 8, ["--crc=on"], None),
         ("lat 8 wait", "iwperf", "lat", 8, ["--crc=on", "--wait"], None),
         ("lat 8 wait busy-poll", "iwperf", "lat", 8, ["--crc=on", "--wait"], bp)],
        [("vp0 write 4K", "iwperf", "write", 4 * KIB, ["--crc=on"], None),
         ("vp1 write 4K", "iwperf", "write", 4 * KIB, ["--crc=on"], vp),
         ("vp0 write 64K", "iwperf", "write", 64 * KIB, ["--crc=on"], None),
         ("vp1 write 64K", "iwperf", "write", 64 * KIB, ["--crc=on"], vp),
         ("vp0 write 1M", "iwperf", "write", MIB, ["--crc=on"], None),
         ("vp1 write 1M", "iwperf", "write", MIB, ["--crc=on"], vp)],
    ]


def plan(rnd):
    out = []
    for g in _jobs():
        out.extend(reversed(g) if rnd % 2 else g)
    return out


def _iwperf_args(a, test, size, extra):
    if test == "lat":
        args = ["-t", "lat", "-S", _size_arg(size)]
        args += ["-n", str(a.lat_iters)] if a.lat_iters else ["-D", str(a.duration)]
        return args + extra
    if a.warmup:
        args = ["-t", test, f"--sweep={_size_arg(size)},{_size_arg(size)}"]
    else:
        args = ["-t", test, "-S", _size_arg(size)]
    args += ["-q", "1", "-Q", str(a.qd)]
    args += ["-n", str(a.iters)] if a.iters is not None else ["-D", str(a.duration)]
    return args + extra


def _iperf3(a, size, logdir, failures, label):
    """One iperf3 run (own server, -1); MB/s received (2^20 B), or None."""
    if not shutil.which("iperf3"):
        failures.append(f"{label}: iperf3 not installed (Debian package iperf3; ./run installs it)")
        return None
    port = _free_port()
    log = os.path.join(logdir, f"iperf3-{port}.log")
    with open(log, "w") as lf:
        srv = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)], stdout=lf,
                               stderr=lf, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            cmd = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-l", _size_arg(size), "-J"]
            if a.iters is not None:
                # At least 4 MiB: on a tiny test iperf3's server may report
                # before it read anything (0 bytes received).
                cmd += ["-k", str(max(a.iters, (4 * MIB) // size))]
            else:
                # iperf3 -t takes whole seconds; 1 s at least (a run holds a
                # warm-up row and a timed row of --duration each on our side).
                cmd += ["-t", str(max(1, int(round(2 * a.duration))))]
            out = None
            # The server's socket opens asynchronously (a loaded machine:
            # seconds); a probe connection would be taken as its one test.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and srv.poll() is None and not _listening(port):
                time.sleep(0.02)
            for _ in range(5):
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
                if r.returncode == 0:
                    out = r.stdout
                    break
                lf.write(r.stdout + r.stderr)
                if "Connection refused" not in (r.stdout + r.stderr):
                    break
                time.sleep(0.2)
        except subprocess.TimeoutExpired:
            out = None
        finally:
            try:
                srv.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(srv.pid, signal.SIGKILL)
                srv.wait()
    try:
        bps = json.loads(out)["end"]["sum_received"]["bits_per_second"] if out else None
    except (ValueError, KeyError):
        bps = None
    if not bps:
        failures.append(f"{label}: iperf3 failed (log {log})")
        return None
    os.unlink(log)
    return bps / 8 / MIB


def run(a, runner, results, failures):
    samples = []
    total = sum(len(plan(r)) for r in range(a.rounds))
    done = 0
    for rnd in range(a.rounds):
        for key, kind, test, size, extra, env in plan(rnd):
            done += 1
            label = f"iperf part: {key}"
            s = {"round": rnd, "key": key}
            if kind == "iperf3":
                f1 = []
                s["bw"] = _iperf3(a, size, runner.logdir, f1, label)
                if s["bw"] is None and shutil.which("iperf3"):
                    _log(f"[{done}/{total}] {key}: failed ({f1[-1] if f1 else '?'}), once more")
                    f1 = []
                    s["bw"] = _iperf3(a, size, runner.logdir, f1, label)
                failures.extend(f1)
                if s["bw"] is None:
                    continue
                _log(f"[{done}/{total}] {key}: {s['bw']:.1f} MB/s")
            else:
                rows, _ = runner.run(_iwperf_args(a, test, size, extra), label, env=env)
                if rows is None:
                    _log(f"[{done}/{total}] {key}: FAILED")
                    continue
                r = rows[-1]
                if test == "lat":
                    s["lat_us"] = r.get("t_typical_us")
                    _log(f"[{done}/{total}] {key}: {s['lat_us']:.2f} us")
                else:
                    s["bw"] = r.get("bw_avg_MBps")
                    _log(f"[{done}/{total}] {key}: {s['bw']:.1f} MB/s")
            samples.append(s)
    results["iperf"] = {"samples": samples}
    results["iperf"]["callgrind"] = callgrind(a, runner, failures)


# ---------------------------------------------------------------- callgrind

FUNCS = ("iw_post_send", "iw_post_recv", "tp_rx")


def callgrind(a, runner, failures):
    """User-space instructions per round trip of one side of `iwperf -t lat
    -S 8` (it receives one message and sends one): the client runs under
    callgrind at two iteration counts; the inclusive counts of the post,
    repost and receive functions (post, transmit, receive, placement,
    completion push; not the idle polling between messages), difference
    over the difference in round trips (set-up cancels)."""
    bindir = os.path.dirname(runner.iwperf)
    if sanitizer_build(bindir):
        _log("callgrind row skipped: sanitizer build (valgrind cannot run ASan binaries)")
        return {"skipped": "sanitizer build"}
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        _log("callgrind row skipped: valgrind not installed")
        return {"skipped": "valgrind not installed"}
    # valgrind 3.19 gives up on some debug info (clang 14's DWARF 5):
    # probe once instead of failing the row's runs.
    probe = subprocess.run(["valgrind", "--tool=none", "--quiet", runner.iwperf, "--help"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120)
    if probe.returncode != 0 or "Giving up" in probe.stderr:
        why = "valgrind cannot read this build's debug info (e.g. clang's DWARF 5)"
        _log(f"callgrind row skipped: {why}")
        return {"skipped": why}
    iters = CG_ITERS_QUICK if a.quick else CG_ITERS
    out = {}
    for crc in ("on",):
        per = {}
        for n in iters:
            tmp = tempfile.mkdtemp(prefix="iwcg.", dir=runner.logdir)
            cg = os.path.join(tmp, "client.cg")
            rows, _ = runner.run(["-t", "lat", "-S", "8", "-n", str(n), f"--crc={crc}", "--timeout", "120"],
                                 f"callgrind lat n={n}",
                                 wrap=["valgrind", "--tool=callgrind", "--quiet", f"--callgrind-out-file={cg}"])
            if rows is None or not os.path.exists(cg):
                shutil.rmtree(tmp, ignore_errors=True)
                return {"failed": True}
            r = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", cg],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            shutil.rmtree(tmp, ignore_errors=True)
            fn = {}
            for line in r.stdout.splitlines():
                m = re.match(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?\S*?:?(\w+)(?:\s|$|')", line)
                if m and m.group(2) in FUNCS and m.group(2) not in fn:
                    fn[m.group(2)] = int(m.group(1).replace(",", ""))
            if set(fn) != set(FUNCS):
                failures.append(f"callgrind: functions not found in the profile: "
                                f"{', '.join(sorted(set(FUNCS) - set(fn)))}")
                return {"failed": True}
            per[n] = fn
        n1, n2 = iters
        by = {f: (per[n2][f] - per[n1][f]) / (n2 - n1) for f in FUNCS}
        out[crc] = {"per_fn": by, "total": sum(by.values())}
        _log(f"callgrind: {out[crc]['total']:.0f} instructions per round trip per side (CRC {crc}): "
             + ", ".join(f"{f} {v:.0f}" for f, v in by.items()))
    return out


# ---------------------------------------------------------------- report

def _idx(results):
    idx = {}
    for s in results.get("iperf", {}).get("samples", []):
        idx.setdefault(s["key"], {})[s["round"]] = s
    return idx


def pair(results, kb, ka, field):
    """(median B, median A, median of per-round B/A, min, max)."""
    idx = _idx(results)
    b, a = idx.get(kb, {}), idx.get(ka, {})
    rs = [b[r][field] / a[r][field] for r in b if r in a and b[r].get(field) and a[r].get(field)]
    return (_median([x.get(field) for x in b.values()]), _median([x.get(field) for x in a.values()]),
            _median(rs), min(rs) if rs else None, max(rs) if rs else None)


def _spread(lo, hi):
    return f", ratio {lo:.3f}..{hi:.3f}" if lo is not None else ""


def target_rows(results, size_str):
    rows = []

    def bw(name, kb, ka, goal, detail):
        ours, base, r, lo, hi = pair(results, kb, ka, "bw")
        rows.append((f"i14: {name}", detail + _spread(lo, hi), ours, base, r, f">= {goal:.2f} x",
                     None if r is None else r >= goal, "MB/s"))

    bw("WRITE 1 MiB vs iperf3", "write 1M", "iperf3 1M", 1.0, "iperf3 -l 1M")
    bw("SEND 1 MiB vs iperf3", "send 1M", "iperf3 1M", 0.95, "iperf3 -l 1M")
    bw("READ 1 MiB vs iperf3", "read 1M", "iperf3 1M", 0.95, "iperf3 -l 1M")
    bw("WRITE 4 KiB msg rate vs iperf3", "write 4K", "iperf3 4K", 1.0, "iperf3 -l 4K (rate ratio = bw ratio)")
    bw("SEND 4 KiB msg rate vs iperf3", "send 4K", "iperf3 4K", 1.0, "iperf3 -l 4K (rate ratio = bw ratio)")
    ours, base, r, lo, hi = pair(results, "lat 8", "tcp lat 8", "lat_us")
    rows.append(("i14: 8-byte latency vs TCP ping-pong", "iwperf lat vs iwperf --tcp lat" + _spread(lo, hi),
                 ours, base, r, "<= 1.05 x", None if r is None else r <= 1.05, "us"))
    bw("CRC on vs off, 4 KiB WRITE", "write 4K", "write 4K off", 0.95, "on / off")
    bw("CRC on vs off, 1 MiB WRITE", "write 1M", "write 1M off", 0.95, "on / off")
    cg = results.get("iperf", {}).get("callgrind", {})
    tot = cg.get("on", {}).get("total") if isinstance(cg, dict) else None
    rows.append(("i14: instructions per small message per side", "callgrind, lat 8 B, CRC on"
                 + (" (skipped: " + cg["skipped"] + ")" if cg.get("skipped") else ""),
                 tot, None, None, f"<= {INSN_BUDGET}", None if tot is None else tot <= INSN_BUDGET, "insn"))
    return rows


def report(results, size_str, fmt):
    md = ["## Issue 14 rows: iperf3 and iwperf --tcp baselines (loopback; median of the rounds; "
          "ratio = ours / baseline per round, median and min..max)\n",
          "| row | ours | iperf3 | ratio | min..max | iwperf --tcp | ratio | min..max |",
          "|---|---:|---:|---:|---|---:|---:|---|"]
    for name, kb, ka, kt in (("WRITE 1 MiB (MB/s)", "write 1M", "iperf3 1M", "tcp write 1M"),
                             ("SEND 1 MiB", "send 1M", "iperf3 1M", "tcp write 1M"),
                             ("READ 1 MiB", "read 1M", "iperf3 1M", "tcp write 1M"),
                             ("WRITE 1 MiB CRC off", "write 1M off", "iperf3 1M", "tcp write 1M"),
                             ("WRITE 4 KiB", "write 4K", "iperf3 4K", "tcp write 4K"),
                             ("SEND 4 KiB", "send 4K", "iperf3 4K", "tcp write 4K"),
                             ("WRITE 4 KiB CRC off", "write 4K off", "iperf3 4K", "tcp write 4K")):
        o, b, r, lo, hi = pair(results, kb, ka, "bw")
        _, t, rt, tlo, thi = pair(results, kb, kt, "bw")
        md.append(f"| {name} | {fmt(o, 1)} | {fmt(b, 1)} | {fmt(r, 3)} | {fmt(lo, 3)}..{fmt(hi, 3)} | "
                  f"{fmt(t, 1)} | {fmt(rt, 3)} | {fmt(tlo, 3)}..{fmt(thi, 3)} |")
    md.append("")
    md.append("### 8-byte latency (us, t_typical; ratio = ours / TCP ping-pong)\n")
    md.append("| row | us | TCP ping-pong us | ratio | min..max |")
    md.append("|---|---:|---:|---:|---|")
    for name, k in (("iwperf lat (spins on iw_progress(0))", "lat 8"),
                    ("iwperf lat --wait (blocks in iw_progress)", "lat 8 wait"),
                    (f"iwperf lat --wait, IWARP_BUSY_POLL_US={BUSY_POLL_US}", "lat 8 wait busy-poll")):
        o, b, r, lo, hi = pair(results, k, "tcp lat 8", "lat_us")
        md.append(f"| {name} | {fmt(o)} | {fmt(b)} | {fmt(r, 3)} | {fmt(lo, 3)}..{fmt(hi, 3)} |")
    md.append("")
    md.append("### Verified placement (IWARP_VERIFIED_PLACEMENT=1) vs default, WRITE, CRC on\n")
    md.append("| size | default MB/s | verified MB/s | ratio | min..max |")
    md.append("|---:|---:|---:|---:|---|")
    for size, k in ((4 * KIB, "4K"), (64 * KIB, "64K"), (MIB, "1M")):
        v, d, r, lo, hi = pair(results, f"vp1 write {k}", f"vp0 write {k}", "bw")
        md.append(f"| {size_str(size)} | {fmt(d, 1)} | {fmt(v, 1)} | {fmt(r, 3)} | {fmt(lo, 3)}..{fmt(hi, 3)} |")
    md.append("")
    cg = results.get("iperf", {}).get("callgrind", {})
    if isinstance(cg, dict) and cg.get("on"):
        md.append("### Instructions per 8-byte round trip, one side (callgrind, client, CRC on)\n")
        md.append("| function (inclusive) | instructions |")
        md.append("|---|---:|")
        for f, v in cg["on"]["per_fn"].items():
            md.append(f"| `{f}` | {v:,.0f} |")
        md.append(f"| total (budget {INSN_BUDGET}) | {cg['on']['total']:,.0f} |")
        md.append("")
    elif isinstance(cg, dict) and cg.get("skipped"):
        md.append(f"Callgrind row skipped: {cg['skipped']}.\n")
    return md
