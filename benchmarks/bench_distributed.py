"""Strong scaling of the sub-cluster sampler over processes and devices (issue 16).

One fixed fit, run on 1 process and on 2 processes (``jax.distributed``, gloo CPU collectives) with the group
rows split over the processes' devices: N points (default 20,000) in D = 16 dimensions from 20 Gaussian blobs,
one chain of the sub-cluster sampler, 40 iterations (30 burn-in, 5 samples 2 apart), no constraints or, with
``--cannot-links K``, K random cannot-links (the colour loop and the label all-gathers). Every configuration
runs in fresh processes, fits once (compile included) and then ``--repeat`` times more (compiled): the median
of those fits' wall time, divided by the iterations, is the time reported (host-side packing of the data
included, as a user's second ``fit`` would see it). All configurations must give the same samples
(checked: the partition does not depend on how the rows are split).

Configurations (``--configs``, default all):

* ``1p``: one process, one device, no mesh: the single-device sampler;
* ``1p-mesh``: one process, ``mesh="all"`` over its one device: the cost of the row-split code path itself;
* ``1p-2dev``: one process with two XLA host devices (``--xla_force_host_platform_device_count=2``) and
  ``mesh="all"``: the rows split over two devices without inter-process communication;
* ``2p``: two processes of one device each, ``mesh="all"``: the rows split over two processes.

Usage::

    python benchmarks/bench_distributed.py                      # all four, N = 20,000 (about 3 minutes)
    python benchmarks/bench_distributed.py --n 100000 --configs 1p,2p --cannot-links 200

On a multi-GPU or multi-host machine, run the worker directly, one process per GPU or per host; it reads
``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` (or Slurm's / Open MPI's settings)
and process 0 prints the result::

    # one host, 4 GPUs, one process per GPU
    for i in 0 1 2 3; do
      JAX_COORDINATOR_ADDRESS=127.0.0.1:12355 JAX_NUM_PROCESSES=4 JAX_PROCESS_ID=$i CUDA_VISIBLE_DEVICES=$i \\
        python benchmarks/bench_distributed.py --worker --n 2000000 &
    done; wait
    # one process owning every local GPU (the mesh is the local devices; no jax.distributed)
    python benchmarks/bench_distributed.py --worker --n 2000000
    # Slurm, 4 hosts, one task per host (each task uses its host's GPUs)
    srun --nodes=4 --ntasks-per-node=1 python benchmarks/bench_distributed.py --worker --n 20000000

Compare against ``--worker --no-mesh`` on one device for the speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import time
import zlib

import numpy as np

ITERS = dict(n_burnin=30, n_samples=5, thin=2)
N_ITERATIONS = ITERS["n_burnin"] + ITERS["n_samples"] * ITERS["thin"]


def data(n: int, d: int, k: int, n_cannot: int, consistent: bool = False):
    from sklearn.datasets import make_blobs

    from jaxclust import Constraints

    X, y = make_blobs(n_samples=n, n_features=d, centers=k, cluster_std=2.0, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    c = None
    if n_cannot:
        rng = np.random.default_rng(1)
        pairs = rng.integers(0, n, (n_cannot, 2))
        keep = [(int(a), int(b)) for a, b in pairs if (y[a] != y[b] if consistent else a != b)]
        c = Constraints(n, cannot_link=keep)
    return X, y, c


def worker(args) -> None:
    from jaxclust.dpmm import distributed

    env = os.environ
    if any(v in env for v in ("JAX_COORDINATOR_ADDRESS", "SLURM_JOB_ID", "OMPI_MCA_orte_hnp_uri")):
        distributed.initialize()
    import jax
    from sklearn.metrics import adjusted_rand_score

    from jaxclust.dpmm import sample

    X, y, c = data(args.n, args.d, args.k, args.cannot_links, args.consistent)
    mesh = None if args.no_mesh else "all"
    times = []
    for _ in range(1 + args.repeat):
        t = time.perf_counter()
        res = sample(0, X, c, n_chains=1, sampler="subcluster", mesh=mesh, **ITERS)
        times.append(time.perf_counter() - t)
    if jax.process_index() == 0:
        out = {
            "processes": jax.process_count(),
            "devices": jax.device_count(),
            "platform": jax.devices()[0].platform,
            "first_s": times[0],
            "second_s": float(np.median(times[1:])),
            "min_s": float(np.min(times[1:])),
            "s_per_iter": float(np.median(times[1:])) / N_ITERATIONS,
            "ari": float(adjusted_rand_score(y, res.samples[0, -1])),
            "components": int(res.n_components[0, -1]),
            "samples_crc": zlib.crc32(np.ascontiguousarray(res.samples, np.int64).tobytes()),
        }
        print("RESULT " + json.dumps(out), flush=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_config(name: str, args) -> dict:
    base = [sys.executable, os.path.abspath(__file__), "--worker", "--n", str(args.n), "--d", str(args.d)]
    base += ["--k", str(args.k), "--cannot-links", str(args.cannot_links), "--repeat", str(args.repeat)]
    base += ["--consistent"] if args.consistent else []
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COORDINATOR") and k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    for k in ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        env.pop(k, None)
    if name == "1p":
        cmds = [base + ["--no-mesh"]]
        envs = [env]
    elif name == "1p-mesh":
        cmds, envs = [base], [env]
    elif name == "1p-2dev":
        cmds, envs = [base], [dict(env, XLA_FLAGS="--xla_force_host_platform_device_count=2")]
    elif name == "2p":
        port = _free_port()
        cmds = [base, base]
        envs = [
            dict(
                env, JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", JAX_NUM_PROCESSES="2", JAX_PROCESS_ID=str(i)
            )
            for i in range(2)
        ]
    else:
        raise SystemExit(f"unknown config {name!r}")
    procs = [
        subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd, e in zip(cmds, envs, strict=True)
    ]
    try:
        outs = [p.communicate(timeout=args.timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (_, err) in zip(procs, outs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"{name}: a process failed:\n{err[-3000:]}")
    lines = [line for out, _ in outs for line in out.splitlines() if line.startswith("RESULT ")]
    return dict(json.loads(lines[0][len("RESULT ") :]), config=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--worker", action="store_true", help="run one process of the fit (see the docstring)"
    )
    parser.add_argument("--no-mesh", action="store_true", help="worker: the single-device sampler")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--d", type=int, default=16)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--cannot-links", type=int, default=0)
    parser.add_argument(
        "--consistent", action="store_true", help="keep only the random cannot-links between different blobs"
    )
    parser.add_argument("--configs", default="1p,1p-mesh,1p-2dev,2p")
    parser.add_argument("--repeat", type=int, default=3, help="compiled fits timed (the median is reported)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", help="write the rows as JSON")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} CPUs")
    print(f"# load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; N={args.n} D={args.d} K={args.k}")
    print(
        f"# cannot-links={args.cannot_links}; {N_ITERATIONS} iterations; median of {args.repeat} compiled fits"
    )
    rows = []
    head = f"{'config':>8} {'procs':>5} {'devs':>4} {'first s':>8} {'median s':>9} {'min s':>6} {'s/iter':>7}"
    print(head + f" {'ARI':>5} same")
    for name in args.configs.split(","):
        r = run_config(name, args)
        rows.append(r)
        same = "yes" if r["samples_crc"] == rows[0]["samples_crc"] else "NO"
        print(
            f"{name:>8} {r['processes']:>5} {r['devices']:>4} {r['first_s']:>8.1f} {r['second_s']:>9.2f} "
            f"{r['min_s']:>6.2f} {r['s_per_iter']:>7.3f} {r['ari']:>5.2f} {same}",
            flush=True,
        )
    load = os.getloadavg()
    print(f"# load average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
