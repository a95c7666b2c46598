"""bench/run's abi part: unmodified perftest under iwarp-run (our
libibverbs.so.1 + librdmacm.so.1) against iwperf on the same libiwarp, on
loopback, alternating A/B in every round like the other parts.

Rows (the issue's acceptance lines, docs/bench.md):
  - `iwarp-run ib_write_bw -R -s SIZE` >= 0.95 x `iwperf -t write -S SIZE`,
    SIZE 64 KiB and 1 MiB;
  - `iwarp-run ib_write_lat -R -s 8` t_typical <= 1.10 x
    `iwperf -t lat -S 8` t_typical.
Each run's CPU (client + server, user + system, from wait4) is reported
as cores busy over the run's wall time: perftest spins in ibv_poll_cq or on
memory by design, so ~1 core per process is its floor; more would be our
helper threads spinning.
"""

import json
import os
import shutil
import sys
import signal
import socket
import subprocess
import tempfile
import time
from bench_stats import median as _median  # noqa: E402

KIB, MIB = 1024, 1024 * 1024
BUILD_TARGETS = ("iwabi_ibverbs", "iwabi_rdmacm")
BW_SIZES = (64 * KIB, MIB)
LAT_SIZE = 8
BW_GOAL, LAT_GOAL = 0.95, 1.10
# perftest -D measures between two margins: DURATION > 2 * MARGIN.
PT_MARGIN_S = 1


def _log(msg):
    print(f"bench: abi: {msg}", flush=True, file=sys.stderr)


def _free_port():
    """A free port P with P+1 free too (iwperf's server also listens on
    P+1 for its TCP baseline)."""
    for _ in range(200):
        s1, s2 = socket.socket(), socket.socket()
        try:
            s1.bind(("127.0.0.1", 0))
            p = s1.getsockname()[1]
            if p < 65535:
                s2.bind(("127.0.0.1", p + 1))
                return p
        except OSError:
            pass
        finally:
            s1.close()
            s2.close()
    raise RuntimeError("no two consecutive free ports")


def _listening(port):
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    fl = line.split()
                    if fl[3] == "0A" and int(fl[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def _wait(proc, timeout):
    """(exit status, CPU s, wall s, timed out) of proc; its process group
    is killed after timeout seconds."""
    t0 = time.monotonic()
    deadline = t0 + timeout
    while True:
        pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(st)
            return proc.returncode, ru.ru_utime + ru.ru_stime, time.monotonic() - t0, False
        if time.monotonic() > deadline:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            _, st, ru = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(st)
            return proc.returncode, ru.ru_utime + ru.ru_stime, time.monotonic() - t0, True
        time.sleep(0.01)


def _size_arg(n):
    return f"{n // MIB}M" if n % MIB == 0 else (f"{n // KIB}K" if n % KIB == 0 else str(n))


class AbiBench:
    def __init__(self, a, bindir, failures):
        self.a = a
        self.iwperf_bin = os.path.join(bindir, "iwperf")
        self.iwrun = os.path.join(bindir, "iwarp-run")
        self.failures = failures
        self.logdir = os.path.join(a.out, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        self.n = 0
        quick = a.quick
        self.bw_iters = a.iters if a.iters is not None else (200 if quick else None)
        self.bw_seconds = max(2 * PT_MARGIN_S + 1, round(2 * (a.duration or 0.5)) + 2 * PT_MARGIN_S)
        self.lat_iters = a.lat_iters if a.lat_iters else 10000
        if quick:
            self.lat_iters = min(self.lat_iters, 500)

    # ------------------------------------------------------------ runs

    def _pair(self, label, server, client, timeout, attempts=2):
        """Runs server, waits for it to listen, runs client; returns
        (client stdout, cores busy) or (None, None). perftest -R re-listens
        for the test connection while the client may already connect
        (REJECTED -111, tests/abi/perftest-check): retried once."""
        for attempt in range(attempts):
            self.n += 1
            port = _free_port()
            errlog = os.path.join(self.logdir, f"abi{self.n:03d}.log")
            srv = cli = None
            with open(errlog, "w") as ef, tempfile.TemporaryFile("w+") as out:
                ef.write(f"# {label}\n")
                try:
                    scmd = [c.replace("PORT", str(port)) for c in server]
                    ccmd = [c.replace("PORT", str(port)) for c in client]
                    ef.write("# " + " ".join(scmd) + "\n# " + " ".join(ccmd) + "\n")
                    ef.flush()
                    srv = subprocess.Popen(scmd, stdout=ef, stderr=ef, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
                    deadline = time.monotonic() + 30
                    while not _listening(port) and srv.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.005)
                    if srv.poll() is not None or not _listening(port):
                        self.failures.append(f"abi: {label}: the server did not start (log {errlog})")
                        return None, None
                    cli = subprocess.Popen(ccmd, stdout=out, stderr=ef, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
                    crc, ccpu, cwall, cto = _wait(cli, timeout)
                    src, scpu, _, sto = _wait(srv, 20)
                    out.seek(0)
                    text = out.read()
                finally:
                    for p in (cli, srv):
                        if p is not None and p.returncode is None:
                            try:
                                os.killpg(p.pid, signal.SIGKILL)
                            except OSError:
                                pass
                            p.wait()
            if crc == 0 and src == 0:
                os.unlink(errlog)
                return text, (ccpu + scpu) / cwall if cwall > 0 else None
            with open(errlog, "a") as ef:
                ef.write(text)
            with open(errlog) as ef:
                retry = "RDMA_CM_EVENT_REJECTED; error: -111" in ef.read()
            why = "timed out" if cto or sto else f"client exit {crc}, server exit {src}"
            if retry and attempt + 1 < attempts:
                _log(f"{label}: perftest's listener race (REJECTED -111), retrying once (log {errlog})")
                continue
            self.failures.append(f"abi: {label}: {why} (log {errlog})")
            return None, None
        return None, None

    def iwperf(self, test, size):
        if test == "lat":
            args = ["-t", "lat", "-S", _size_arg(size), "-n", str(self.lat_iters)]
        else:
            # The warm-up row as in the host part (the initiator's first
            # FPDU delay, window growth); only the last row counts.
            args = ["-t", test, f"--sweep={_size_arg(size)},{_size_arg(size)}", "-q", "1", "-Q",
                    str(self.a.qd)]
            args += ["-n", str(self.bw_iters)] if self.bw_iters else ["-D", str(self.bw_seconds - 2 * PT_MARGIN_S)]
        label = f"iwperf {test} {size}"
        text, cores = self._pair(label, [self.iwperf_bin, "-s", "-a", "127.0.0.1", "-p", "PORT", "--once"],
                                 [self.iwperf_bin, "-c", "127.0.0.1", "-p", "PORT", "--json", *args],
                                 self._timeout(test))
        if text is None:
            return None
        rows = [json.loads(x) for x in text.splitlines() if x.strip().startswith("{")]
        if not rows:
            self.failures.append(f"abi: {label}: no JSON row")
            return None
        r = rows[-1]
        if test == "lat":
            return {"lat_us": r.get("t_typical_us"), "lat_min_us": r.get("t_min_us"), "cores": cores}
        return {"bw": r.get("bw_avg_MBps"), "cores": cores}

    def perftest(self, test, size):
        prog = "ib_write_lat" if test == "lat" else "ib_write_bw"
        args = [prog, "-R", "-s", str(size), "-p", "PORT"]
        if test == "lat":
            args += ["-n", str(self.lat_iters)]
        elif self.bw_iters:
            args += ["-n", str(self.bw_iters)]
        else:
            args += ["-D", str(self.bw_seconds), "-f", str(PT_MARGIN_S)]
        label = f"iwarp-run {' '.join(a for a in args if a not in ('-p', 'PORT'))}"
        text, cores = self._pair(label, [self.iwrun, *args], [self.iwrun, *args, "127.0.0.1"],
                                 self._timeout(test))
        if text is None:
            return None
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith("#bytes") and i + 1 < len(lines):
                f = lines[i + 1].split()
                try:
                    if int(f[0]) != size:
                        break
                    if test == "lat":
                        return {"lat_us": float(f[4]), "lat_min_us": float(f[2]), "cores": cores}
                    return {"bw": float(f[3]), "cores": cores}
                except (IndexError, ValueError):
                    break
        self.failures.append(f"abi: {label}: unreadable perftest report")
        return None

    def _timeout(self, test):
        return 120 + (self.lat_iters // 1000 if test == "lat" else 3 * self.bw_seconds)


def plan(rnd):
    """One round: per row the iwperf run (A) and the perftest run (B);
    odd rounds reverse each pair."""
    jobs = []
    for test, size in [("write", s) for s in BW_SIZES] + [("lat", LAT_SIZE)]:
        g = [("iwperf", test, size), ("perftest", test, size)]
        jobs.extend(reversed(g) if rnd % 2 else g)
    return jobs


def run(a, bindir, results, failures):
    """Fills results["abi"] with samples; skips (recorded) without
    perftest or without the ABI libraries."""
    missing = [p for p in ("ib_write_bw", "ib_write_lat") if not shutil.which(p)]
    libdir = os.path.join(os.path.dirname(bindir), "lib")
    if missing:
        _log(f"skipped: {', '.join(missing)} not installed (Debian: perftest)")
        results["abi"] = {"skipped": "perftest not installed"}
        a.parts.discard("abi")
        return
    if not os.access(os.path.join(bindir, "iwarp-run"), os.X_OK) or not all(
            os.path.exists(os.path.join(libdir, x)) for x in ("libibverbs.so.1", "librdmacm.so.1")):
        failures.append(f"abi: iwarp-run or libibverbs.so.1/librdmacm.so.1 missing next to {bindir}")
        results["abi"] = {"samples": []}
        return
    b = AbiBench(a, bindir, failures)
    samples = []
    total = sum(len(plan(r)) for r in range(a.rounds))
    done = 0
    for rnd in range(a.rounds):
        for tool, test, size in plan(rnd):
            done += 1
            s = b.iwperf(test, size) if tool == "iwperf" else b.perftest(test, size)
            if s is None:
                _log(f"[{done}/{total}] {tool} {test} {size}: FAILED")
                continue
            s.update({"round": rnd, "tool": tool, "test": test, "size": size})
            v = f"{s['lat_us']:.2f} us" if test == "lat" else f"{s['bw']:.1f} MB/s"
            _log(f"[{done}/{total}] {tool} {test} {size}: {v}, {s['cores']:.2f} cores")
            samples.append(s)
    results["abi"] = {"samples": samples}


def summary(results):
    """Per row: (test, size, perftest median, iwperf median, ratio median,
    ratio min, ratio max, cores perftest, cores iwperf)."""
    idx = {}
    for s in results.get("abi", {}).get("samples", []):
        idx.setdefault((s["tool"], s["test"], s["size"]), {})[s["round"]] = s
    out = []
    for test, size in [("write", s) for s in BW_SIZES] + [("lat", LAT_SIZE)]:
        field = "lat_us" if test == "lat" else "bw"
        pt, iw = idx.get(("perftest", test, size), {}), idx.get(("iwperf", test, size), {})
        ratios = [pt[r][field] / iw[r][field] for r in pt if r in iw and pt[r].get(field) and iw[r].get(field)]
        out.append((test, size, _median([x.get(field) for x in pt.values()]),
                    _median([x.get(field) for x in iw.values()]), _median(ratios),
                    min(ratios) if ratios else None, max(ratios) if ratios else None,
                    _median([x.get("cores") for x in pt.values()]),
                    _median([x.get("cores") for x in iw.values()])))
    return out


def target_rows(results, size_str):
    """bench/run's target rows: (name, detail, ours, baseline, ratio,
    goal, pass, unit)."""
    rows = []
    for test, size, pt, iw, ratio, lo, hi, _, _ in summary(results):
        spread = f", ratio {lo:.3f}..{hi:.3f}" if lo is not None else ""
        if test == "lat":
            rows.append(("abi: ib_write_lat -R vs iwperf", f"8 B t_typical{spread}", pt, iw, ratio,
                         f"<= {LAT_GOAL:.2f} x iwperf -t lat", None if ratio is None else ratio <= LAT_GOAL, "us"))
        else:
            rows.append(("abi: ib_write_bw -R vs iwperf", f"WRITE {size_str(size)}{spread}", pt, iw, ratio,
                         f">= {BW_GOAL:.2f} x iwperf -t write", None if ratio is None else ratio >= BW_GOAL,
                         "MB/s"))
    return rows


def report(results, size_str, fmt):
    md = ["## perftest under iwarp-run vs iwperf (loopback; median of the rounds; "
          "ratio = perftest / iwperf per round, median and min..max; cores = client + server CPU "
          "over wall time)\n",
          "| row | perftest | iwperf | ratio | ratio min..max | cores perftest | cores iwperf |",
          "|---|---:|---:|---:|---|---:|---:|"]
    for test, size, pt, iw, ratio, lo, hi, cpt, ciw in summary(results):
        name = "ib_write_lat 8 B t_typical (us)" if test == "lat" else f"ib_write_bw {size_str(size)} (MB/s)"
        spread = f"{fmt(lo, 3)}..{fmt(hi, 3)}"
        md.append(f"| {name} | {fmt(pt)} | {fmt(iw)} | {fmt(ratio, 3)} | {spread} | {fmt(cpt)} | {fmt(ciw)} |")
    md.append("\nperftest's cores include its set-up (clock calibration, rdma_cm exchange); "
              "both tools spin while they run, so ~2 cores is the floor of every row.\n")
    return md

