"""bench/run's raw part (issue 13): our TCP/IP on AF_PACKET ("raw") against
the kernel's TCP, on one veth between two network namespaces this module
creates (and removes on every exit path).

Pairs (client <-> server), each at MTU 1500 and 9000:
  - kernel<->kernel: both ends on kernel TCP, with the kernel's offloads
    (TSO/GSO, checksum offload) - the baseline;
  - raw<->kernel: the client on our TCP (offloads on: GSO super-segments,
    checksum offload, 64 KiB GSO packets received whole), the server on
    kernel TCP with its offloads on;
  - raw<->raw: both ends on our TCP.
Rows: iwperf RDMA WRITE, READ and SEND at 64 KiB and 1 MiB (bandwidth,
--duration seconds each, queue depth 16, CRC on) and an 8-byte SEND
ping-pong (t_typical). CPU s/GB = user + system seconds of both
processes (client and server, from wait4's rusage) per 10^9 payload
bytes. Rounds alternate the order of the pairs (A B C, C B A, ...);
ratios are taken per round between runs of the same row and the
reported ratio is their median, with the spread (min..max).

Goal (issue 13): raw<->raw >= 1.0 x kernel<->kernel bandwidth with CPU
per GB no higher; raw<->kernel >= 0.9 x; raw<->raw 8-byte latency <=
0.6 x kernel. Each row has its PASS/MISS.

Where the cycles go: the raw runs set IWARP_RAW_STATS=1; the device and
connection counters both ends print at close become per-MiB figures
(frames, flushes = send syscalls, GSO super-segments, ACK segments)
next to each end's user/system CPU per MiB."""

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from bench_stats import median as _median  # noqa: E402

KIB, MIB = 1024, 1024 * 1024
MTUS = (1500, 9000)
BW_TESTS = ("write", "read", "send")
BW_SIZES = (64 * KIB, MIB)
PAIRS = ("kernel", "rawkernel", "rawraw")  # client-server
PAIR_NAME = {"kernel": "kernel<->kernel", "rawkernel": "raw<->kernel", "rawraw": "raw<->raw"}
GOAL_BW = {"rawraw": 1.0, "rawkernel": 0.9}
GOAL_LAT = 0.6
IP = {"kernel_c": "10.77.0.1", "kernel_s": "10.77.0.2", "raw_c": "10.77.0.3", "raw_s": "10.77.0.4"}


def _log(msg):
    print(f"bench: raw: {msg}", flush=True, file=sys.stderr)


def _sh(*args, check=True):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stdout.strip()}")
    return r


class Veth:
    """Two namespaces joined by one veth: A (client, pk0) and S (server, pk1)."""

    def __init__(self):
        self.a, self.s = f"iwrbA-{os.getpid()}", f"iwrbS-{os.getpid()}"

    def __enter__(self):
        _sh("ip", "netns", "add", self.a)
        _sh("ip", "netns", "add", self.s)
        _sh("ip", "link", "add", "pk0", "netns", self.a, "type", "veth", "peer", "name", "pk1", "netns", self.s)
        for ns, dev, ip in ((self.a, "pk0", IP["kernel_c"]), (self.s, "pk1", IP["kernel_s"])):
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            _sh("ip", "-n", ns, "addr", "add", ip + "/24", "dev", dev)
            _sh("ip", "-n", ns, "link", "set", dev, "up")
            _sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
        mac0 = _sh("ip", "netns", "exec", self.a, "cat", "/sys/class/net/pk0/address").stdout.strip()
        mac1 = _sh("ip", "netns", "exec", self.s, "cat", "/sys/class/net/pk1/address").stdout.strip()
        # The kernels reach the raw ends' addresses without asking.
        _sh("ip", "-n", self.s, "neigh", "replace", IP["raw_c"], "lladdr", mac0, "dev", "pk1")
        _sh("ip", "-n", self.a, "neigh", "replace", IP["raw_s"], "lladdr", mac1, "dev", "pk0")
        return self

    def mtu(self, mtu):
        _sh("ip", "-n", self.a, "link", "set", "pk0", "mtu", str(mtu))
        _sh("ip", "-n", self.s, "link", "set", "pk1", "mtu", str(mtu))

    def __exit__(self, *exc):
        for ns in (self.a, self.s):
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def _wait(p, timeout):
    """wait4 with a deadline: (status, user s, sys s); kills on timeout."""
    end = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return p.returncode, ru.ru_utime, ru.ru_stime
        if time.monotonic() > end:
            p.kill()
        time.sleep(0.01)


STAT_RE = {
    "tx_frames": re.compile(r"tx (\d+) frames in (\d+) flushes"),
    "rx_frames": re.compile(r"pktio rx (\d+) frames"),
    "tx_gso": re.compile(r"tx gso (\d+) \("),
    "segs": re.compile(r"segs in (\d+) out (\d+)"),
}


def _raw_stats(text):
    """Sum of the device/connection counters an end printed at close."""
    out = {"tx_frames": 0, "flushes": 0, "rx_frames": 0, "tx_gso": 0, "segs_out": 0, "segs_in": 0}
    for line in text.splitlines():
        m = STAT_RE["tx_frames"].search(line)
        if m:
            out["tx_frames"] += int(m.group(1))
            out["flushes"] += int(m.group(2))
        m = STAT_RE["rx_frames"].search(line)
        if m:
            out["rx_frames"] += int(m.group(1))
        m = STAT_RE["tx_gso"].search(line)
        if m:
            out["tx_gso"] += int(m.group(1))
        m = STAT_RE["segs"].search(line)
        if m and "raw conn" in line:
            out["segs_in"] += int(m.group(1))
            out["segs_out"] += int(m.group(2))
    return out


def _one(v, iwperf, pair, test, size, duration, port):
    """One iwperf run; returns a row dict or raises."""
    craw, sraw = pair in ("rawkernel", "rawraw"), pair == "rawraw"
    sip = IP["raw_s"] if sraw else IP["kernel_s"]
    sargs = ["--transport=raw", "--dev", "pk1", "--ip", IP["raw_s"] + "/24"] if sraw else []
    cargs = ["--transport=raw", "--dev", "pk0", "--ip", IP["raw_c"] + "/24"] if craw else []
    env = dict(os.environ, IWARP_RAW_STATS="1")
    env.pop("IWARP_RAW_OFFLOAD", None)
    srv = subprocess.Popen(["ip", "netns", "exec", v.s, iwperf, "-s", "-a", sip, "-p", str(port), "--once",
                            *sargs], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(0.3)
    targs = ["-t", "lat", "-S", "8", "-n", "20000"] if test == "lat" else \
        ["-t", test, "-S", str(size), "-D", str(duration)]
    cli = subprocess.Popen(["ip", "netns", "exec", v.a, iwperf, "-c", sip, "-p", str(port), "--json", *targs,
                            *cargs], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        cout, cerr = cli.communicate(timeout=duration + 60)
    except subprocess.TimeoutExpired:
        cli.kill()
        srv.kill()
        cli.communicate()
        _wait(srv, 5)
        raise
    # communicate() reaped the client: its CPU is in RUSAGE_CHILDREN (see
    # _client_cpu); the server's comes from its own wait4.
    src, su, ss = _wait(srv, 30)
    serr = srv.stderr.read() if srv.stderr else ""
    if cli.returncode != 0 or src != 0:
        raise RuntimeError(f"{PAIR_NAME[pair]} {test} {size}: client {cli.returncode} server {src}: "
                           f"{(cerr + serr)[-400:]}")
    row = None
    for line in cout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
    if row is None:
        raise RuntimeError(f"{PAIR_NAME[pair]} {test} {size}: no JSON row")
    row["server_cpu_s"] = su + ss
    row["server_user_s"], row["server_sys_s"] = su, ss
    row["client_stats"] = _raw_stats(cerr) if craw else None
    row["server_stats"] = _raw_stats(serr) if sraw else None
    return row


def _client_cpu():
    """Children CPU so far (user, sys): clients are reaped by communicate,
    so their CPU is the growth of RUSAGE_CHILDREN around the run minus the
    server's (which _wait measured on its own)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime, ru.ru_stime


def _free_port(base=[30000]):
    base[0] += 2
    if base[0] > 60000:
        base[0] = 30000
    return base[0]


def run(a, bindir, results, failures):
    if os.geteuid() != 0:
        _log("skipped: needs root (namespaces, raw sockets)")
        results["raw"] = {"skipped": "needs root"}
        a.parts.discard("raw")
        return
    iwperf = os.path.join(bindir, "iwperf")
    duration = min(a.duration or 2.0, 3.0)
    duration = max(duration, 1.0)
    rows = []  # dicts: round, pair, mtu, test, size, row
    try:
        with Veth() as v:
            for rnd in range(a.rounds):
                order = PAIRS if rnd % 2 == 0 else tuple(reversed(PAIRS))
                _log(f"round {rnd + 1}/{a.rounds}: {', '.join(PAIR_NAME[p] for p in order)}, "
                     f"MTU {', '.join(map(str, MTUS))}, {duration:g} s per bandwidth row")
                for mtu in MTUS:
                    v.mtu(mtu)
                    for test, size in [(t, s) for t in BW_TESTS for s in BW_SIZES] + [("lat", 8)]:
                        for pair in order:
                            before = _client_cpu()
                            try:
                                row = _one(v, iwperf, pair, test, size, duration, _free_port())
                            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                                failures.append(f"raw: {e}")
                                continue
                            after = _client_cpu()
                            cu = after[0] - before[0] - row["server_user_s"]
                            cs = after[1] - before[1] - row["server_sys_s"]
                            row["client_user_s"], row["client_sys_s"] = max(cu, 0.0), max(cs, 0.0)
                            rows.append({"round": rnd, "pair": pair, "mtu": mtu, "test": test, "size": size,
                                         "row": row})
    except RuntimeError as e:
        _log(f"skipped: cannot set up the namespaces/veth: {e}")
        results["raw"] = {"skipped": "no namespaces/veth"}
        a.parts.discard("raw")
        return
    results["raw"] = summarize(rows)


def _bytes(row):
    return row.get("bytes", 0) * row.get("iterations", 0)


def _cpu_per_gb(row):
    b = _bytes(row)
    tot = row.get("client_user_s", 0) + row.get("client_sys_s", 0) + row.get("server_cpu_s", 0)
    return tot / (b / 1e9) if b else None


def summarize(rows):
    """Per (mtu, test, size): each pair's median value, the per-round
    ratios against kernel<->kernel (median, min, max), CPU s/GB, and the
    where-the-cycles-go figures per MiB for the raw ends."""
    out = {"rows": []}
    keys = sorted({(r["mtu"], r["test"], r["size"]) for r in rows})
    for mtu, test, size in keys:
        sel = [r for r in rows if (r["mtu"], r["test"], r["size"]) == (mtu, test, size)]
        field = "t_typical_us" if test == "lat" else "bw_avg_MBps"
        ent = {"mtu": mtu, "test": test, "size": size, "field": field}
        for pair in PAIRS:
            vals = [r["row"].get(field) for r in sel if r["pair"] == pair]
            ent[pair] = _median(vals)
            ent[pair + "_all"] = vals
            if test != "lat":
                ent[pair + "_cpu_s_per_GB"] = _median([_cpu_per_gb(r["row"]) for r in sel if r["pair"] == pair])
            if pair != "kernel":
                ratios = []
                for rnd in sorted({r["round"] for r in sel}):
                    k = [r["row"].get(field) for r in sel if r["pair"] == "kernel" and r["round"] == rnd]
                    x = [r["row"].get(field) for r in sel if r["pair"] == pair and r["round"] == rnd]
                    if k and x and k[0] and x[0]:
                        ratios.append(x[0] / k[0])
                ent[pair + "_ratio"] = _median(ratios)
                ent[pair + "_ratio_min"] = min(ratios) if ratios else None
                ent[pair + "_ratio_max"] = max(ratios) if ratios else None
                # Per MiB, both ends (raw ends' counters, each end's CPU).
                per = []
                for r in sel:
                    if r["pair"] != pair or test == "lat":
                        continue
                    row = r["row"]
                    mib = _bytes(row) / MIB
                    if not mib:
                        continue
                    d = {"client_user_ms": 1e3 * row.get("client_user_s", 0) / mib,
                         "client_sys_ms": 1e3 * row.get("client_sys_s", 0) / mib,
                         "server_user_ms": 1e3 * row.get("server_user_s", 0) / mib,
                         "server_sys_ms": 1e3 * row.get("server_sys_s", 0) / mib}
                    for end in ("client", "server"):
                        st = row.get(end + "_stats")
                        if st:
                            for k2, val in st.items():
                                d[f"{end}_{k2}"] = val / mib
                    per.append(d)
                if per:
                    ent[pair + "_per_mib"] = {k2: _median([p.get(k2) for p in per]) for k2 in per[0]}
        out["rows"].append(ent)
    return out


def _fmt(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"


def _size(s):
    return f"{s // MIB} MiB" if s >= MIB else (f"{s // KIB} KiB" if s >= KIB else f"{s} B")


def target_rows(a, results):
    """Rows for bench/run's target table: (name, detail, ours, base, ratio,
    goal, ok, unit)."""
    raw = results.get("raw") if isinstance(results.get("raw"), dict) else {}
    rows = []
    for ent in raw.get("rows", []):
        mtu, test, size = ent["mtu"], ent["test"], ent["size"]
        if test == "lat":
            r = ent.get("rawraw_ratio")
            rows.append(("raw<->raw: 8-byte latency on veth", f"typical, MTU {mtu}", ent.get("rawraw"),
                         ent.get("kernel"), r, f"<= {GOAL_LAT} x kernel", None if r is None else r <= GOAL_LAT,
                         "us"))
            continue
        for pair in ("rawraw", "rawkernel"):
            r = ent.get(pair + "_ratio")
            goal = GOAL_BW[pair]
            rows.append((f"{PAIR_NAME[pair]}: bw vs kernel<->kernel on veth",
                         f"{test.upper()} {_size(size)}, MTU {mtu}", ent.get(pair), ent.get("kernel"), r,
                         f">= {goal} x kernel", None if r is None else r >= goal, "MB/s"))
        c_raw, c_k = ent.get("rawraw_cpu_s_per_GB"), ent.get("kernel_cpu_s_per_GB")
        rows.append(("raw<->raw: CPU per GB vs kernel<->kernel", f"{test.upper()} {_size(size)}, MTU {mtu}",
                     c_raw, c_k, c_raw / c_k if c_raw and c_k else None, "<= 1.0 x kernel",
                     None if not (c_raw and c_k) else c_raw <= c_k, "s/GB"))
    return rows


def report_md(results):
    """The raw section of results.md."""
    raw = results.get("raw") if isinstance(results.get("raw"), dict) else {}
    if not raw.get("rows"):
        return []
    md = ["## Raw transport vs kernel TCP (one veth between two namespaces; bench/raw_part.py)\n",
          "Median of the rounds; ratio = median of per-round ratios against kernel<->kernel "
          "(spread min..max); CPU = client + server user + system seconds per 10^9 bytes.\n",
          "| MTU | row | kernel<->kernel | raw<->kernel | ratio (spread) | raw<->raw | ratio (spread) | "
          "CPU s/GB kernel / raw<->raw |",
          "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for ent in raw["rows"]:
        unit = "us" if ent["test"] == "lat" else "MB/s"
        name = "8 B latency" if ent["test"] == "lat" else f"{ent['test'].upper()} {_size(ent['size'])}"
        spread = {p: f"{_fmt(ent.get(p + '_ratio'), 3)} ({_fmt(ent.get(p + '_ratio_min'), 2)}.."
                     f"{_fmt(ent.get(p + '_ratio_max'), 2)})" for p in ("rawkernel", "rawraw")}
        cpu = "-" if ent["test"] == "lat" else \
            f"{_fmt(ent.get('kernel_cpu_s_per_GB'), 3)} / {_fmt(ent.get('rawraw_cpu_s_per_GB'), 3)}"
        md.append(f"| {ent['mtu']} | {name} ({unit}) | {_fmt(ent.get('kernel'))} | {_fmt(ent.get('rawkernel'))} | "
                  f"{spread['rawkernel']} | {_fmt(ent.get('rawraw'))} | {spread['rawraw']} | {cpu} |")
    md.append("")
    md.append("Where the cycles go, raw<->raw, per MiB moved (median; client = sender for WRITE/SEND, "
              "server = sender for READ): CPU ms user/system per end, frames each end put on the ring, "
              "send syscalls (flushes), GSO super-segments, TCP segments in/out.\n")
    md.append("| MTU | row | client us/sy ms | server us/sy ms | client tx frames / flushes / gso | "
              "server tx frames / flushes / gso | client segs in/out | server segs in/out |")
    md.append("|---:|---|---:|---:|---:|---:|---:|---:|")
    for ent in raw["rows"]:
        p = ent.get("rawraw_per_mib")
        if not p:
            continue
        md.append(f"| {ent['mtu']} | {ent['test'].upper()} {_size(ent['size'])} | "
                  f"{_fmt(p.get('client_user_ms'))}/{_fmt(p.get('client_sys_ms'))} | "
                  f"{_fmt(p.get('server_user_ms'))}/{_fmt(p.get('server_sys_ms'))} | "
                  f"{_fmt(p.get('client_tx_frames'), 1)} / {_fmt(p.get('client_flushes'), 1)} / "
                  f"{_fmt(p.get('client_tx_gso'), 1)} | "
                  f"{_fmt(p.get('server_tx_frames'), 1)} / {_fmt(p.get('server_flushes'), 1)} / "
                  f"{_fmt(p.get('server_tx_gso'), 1)} | "
                  f"{_fmt(p.get('client_segs_in'), 1)}/{_fmt(p.get('client_segs_out'), 1)} | "
                  f"{_fmt(p.get('server_segs_in'), 1)}/{_fmt(p.get('server_segs_out'), 1)} |")
    md.append("")
    return md


if __name__ == "__main__":
    # Stand-alone: bench/raw_part.py BINDIR [ROUNDS] [DURATION] prints the
    # tables (bench/run --only raw does the same inside the full report).
    class A:
        pass
    args = A()
    args.rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    args.duration = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    args.parts = {"raw"}
    res, fails = {}, []
    signal.signal(signal.SIGTERM, lambda *x: sys.exit(143))
    run(args, sys.argv[1], res, fails)
    for f in fails:
        print("FAIL:", f)
    print("\n".join(report_md(res)))
    for r in target_rows(args, res):
        name, detail, ours, base, ratio, goal, ok, unit = r
        print(f"{name} | {detail} | {_fmt(ours)} {unit} | {_fmt(base)} | {_fmt(ratio, 3)} | {goal} | "
              f"{'n/a' if ok is None else ('PASS' if ok else 'MISS')}")
    with open(os.environ.get("RAW_PART_JSON", "/dev/null"), "w") as f:
        json.dump(res, f, indent=1, default=str)
