"""bench/run's mpi part: an Open MPI ping-pong (tests/mpi/mpi_check
--bench, two ranks on this machine) over libiwarp against the same job
over Open MPI's own TCP transport, alternating in every round.

  - ours: `iwarp-run mpirun --mca pml cm --mca mtl ofi` with libfabric's
    "verbs;ofi_rxm" pinned and btl self only (libiwarp over kernel TCP
    on loopback carries every message; IWARP_STATS proves it per run);
  - baseline: `mpirun --mca pml ob1 --mca btl tcp,self` (Open MPI's TCP
    BTL, same machine, same program).
Rows: 8-byte latency (half round trip, us) and 1 MiB bandwidth (MB/s,
size over half round trip). Each run prints REPS repetitions; a row's
figure is the median over every repetition of every round, with min..max,
and the ratio is taken per round between the neighbouring runs. No
target: the rows are measured so that a regression shows. Not in
--quick runs unless --mpi is given (then very short).
"""

import os
import shutil
import subprocess
import sys
import tempfile
from bench_stats import median as _median  # noqa: E402

KIB, MIB = 1024, 1024 * 1024
LAT_SIZE, BW_SIZE = 8, MIB
MPI_OFI = ["--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "verbs;ofi_rxm",
           "--mca", "btl", "self", "-x", "FI_PROVIDER=verbs;ofi_rxm", "-x", "IWARP_STATS"]
MPI_TCP = ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]
COMMON = ["--allow-run-as-root", "--oversubscribe", "-np", "2"]
TOOLS = ("ofi", "tcp")


def _log(msg):
    print(f"bench: mpi: {msg}", flush=True, file=sys.stderr)


def _build(out):
    """mpi_check built with mpicc into OUT (the bench's release tree has
    no tests)."""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "tests", "mpi",
                       "mpi_check.c")
    exe = os.path.join(out, "mpi_check")
    r = subprocess.run(["mpicc", "-O2", "-std=c11", "-o", exe, src], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        return None, f"mpi: mpicc failed: {r.stdout[-2000:]}"
    return exe, None


def _job(a, bindir, exe, tool, size, iters, reps, stats):
    """One mpirun; the per-repetition usec list, or (None, error)."""
    if tool == "ofi":
        cmd = [os.path.join(bindir, "iwarp-run"), "mpirun", *COMMON, *MPI_OFI]
    else:
        cmd = ["mpirun", *COMMON, *MPI_TCP]
    cmd += [exe, "--bench", str(size), str(iters), str(reps)]
    env = dict(os.environ, IWARP_STATS=stats)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                           timeout=120)
    except subprocess.TimeoutExpired:
        return None, f"mpi: {tool} {size} B: timed out"
    us = [float(w.split("=", 1)[1]) for line in r.stdout.splitlines() if line.startswith("pingpong ")
          for w in line.split() if w.startswith("usec=")]
    if r.returncode != 0 or len(us) != reps:
        return None, f"mpi: {tool} {size} B: exit {r.returncode}: {r.stdout[-1500:]}"
    return us, None


def _stats_ok(path):
    """Both ranks moved data through libiwarp (tests/fabric/stats-lib.sh)."""
    try:
        with open(path) as f:
            lines = [dict(w.split("=", 1) for w in ln.split()[1:]) for ln in f if ln.startswith("iwarp-stats")]
    except OSError:
        return False
    ranks = [x for x in lines if int(x.get("qps", 0)) > 0]
    return len(ranks) == 2 and all(int(x["fpdus_tx"]) > 0 and int(x["bytes_placed"]) > 0 for x in ranks)


def run(a, bindir, results, failures):
    missing = [p for p in ("mpirun", "mpicc", "fi_info") if not shutil.which(p)]
    if missing:
        _log(f"skipped: {', '.join(missing)} not installed (Debian: openmpi-bin libopenmpi-dev libfabric-bin)")
        results["mpi"] = {"skipped": "Open MPI or libfabric not installed"}
        a.parts.discard("mpi")
        return
    if not os.access(os.path.join(bindir, "iwarp-run"), os.X_OK):
        failures.append(f"mpi: iwarp-run missing in {bindir}")
        results["mpi"] = {"samples": []}
        return
    work = tempfile.mkdtemp(prefix="mpi-", dir=a.out)
    exe, err = _build(work)
    if err:
        failures.append(err)
        results["mpi"] = {"samples": []}
        return
    q = a.quick
    plan = {LAT_SIZE: (200 if q else 2000, 2 if q else 5), BW_SIZE: (10 if q else 100, 2 if q else 5)}
    samples = []
    for rnd in range(a.rounds):
        order = TOOLS if rnd % 2 == 0 else TOOLS[::-1]
        for size, (iters, reps) in plan.items():
            for tool in order:
                stats = os.path.join(work, f"stats-{rnd}-{size}-{tool}")
                us, err = _job(a, bindir, exe, tool, size, iters, reps, stats)
                if err:
                    failures.append(err)
                    _log(err.splitlines()[0])
                    continue
                if tool == "ofi" and not _stats_ok(stats):
                    failures.append(f"mpi: round {rnd} {size} B: no traffic through libiwarp in IWARP_STATS")
                    continue
                samples.append({"round": rnd, "tool": tool, "size": size, "usec": us})
                _log(f"round {rnd + 1}/{a.rounds} {tool} {size} B: median {_median(us):.2f} us")
    shutil.rmtree(work, ignore_errors=True)
    results["mpi"] = {"samples": samples}


def summary(results):
    """Per size: (size, unit, ours median, ours min, ours max, tcp median,
    tcp min, tcp max, ratio median, ratio min, ratio max); latency in us,
    bandwidth in MB/s; ratio = ours / tcp of those figures."""
    out = []
    samples = results.get("mpi", {}).get("samples", [])
    for size in (LAT_SIZE, BW_SIZE):
        def vals(tool, rnd=None):
            v = [u for s in samples if s["tool"] == tool and s["size"] == size and rnd in (None, s["round"])
                 for u in s["usec"]]
            return v if size == LAT_SIZE else [size / u for u in v]
        ours, tcp = vals("ofi"), vals("tcp")
        rounds = sorted({s["round"] for s in samples})
        ratios = [_median(vals("ofi", r)) / _median(vals("tcp", r)) for r in rounds
                  if vals("ofi", r) and vals("tcp", r)]
        out.append((size, "us" if size == LAT_SIZE else "MB/s", _median(ours), min(ours, default=None),
                    max(ours, default=None), _median(tcp), min(tcp, default=None), max(tcp, default=None),
                    _median(ratios), min(ratios, default=None), max(ratios, default=None)))
    return out


def target_rows(results, size_str):
    rows = []
    for size, unit, o, olo, ohi, t, tlo, thi, r, rlo, rhi in summary(results):
        spread = "" if olo is None else f", ours {olo:.1f}..{ohi:.1f}"
        if size == LAT_SIZE:
            rows.append(("mpi: ping-pong latency vs Open MPI TCP", f"8 B, 2 ranks{spread}", o, t, r,
                         "(measured, no target)", None, unit))
        else:
            rows.append(("mpi: ping-pong bandwidth vs Open MPI TCP", f"{size_str(size)}, 2 ranks{spread}", o, t,
                         r, "(measured, no target)", None, unit))
    return rows


def report(results, size_str, fmt):
    md = ["## Open MPI ping-pong over libiwarp vs Open MPI's TCP transport (loopback, 2 ranks; "
          "median over every repetition of every round, min..max; ratio = ours / TCP per round)\n",
          "| row | libiwarp (pml cm, mtl ofi, verbs;ofi_rxm) | min..max | TCP (pml ob1, btl tcp) | min..max "
          "| ratio | ratio min..max |",
          "|---|---:|---|---:|---|---:|---|"]
    for size, unit, o, olo, ohi, t, tlo, thi, r, rlo, rhi in summary(results):
        name = "8 B latency (us)" if size == LAT_SIZE else f"{size_str(size)} bandwidth (MB/s)"
        md.append(f"| {name} | {fmt(o)} | {fmt(olo)}..{fmt(ohi)} | {fmt(t)} | {fmt(tlo)}..{fmt(thi)} | "
                  f"{fmt(r, 3)} | {fmt(rlo, 3)}..{fmt(rhi, 3)} |")
    md.append("\nLatency ratios are of times (lower is better), bandwidth ratios of rates (higher is "
              "better). Every libiwarp run's IWARP_STATS must show both ranks' traffic.\n")
    return md
