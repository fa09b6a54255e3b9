"""The DPMM over several processes (``jax.distributed``), for real: local CPU processes started here.

Each multi-process test starts ``distributed_worker.py`` N times (one ``jax.distributed`` process each, gloo
CPU collectives, a free local port) and once more without ``jax.distributed`` for the single-process reference,
all at once, and waits for them with a deadline: a worker that fails stops the others, and on the deadline all
are killed. With the same seed every process must return the single-process result: the same partitions (every
retained sample, every chain's last state, the same slot growths) and the same log joints and alphas to
float rounding (sums over rows are added in another order over devices).

Compiling the sampler is most of the time. The tests in the default run compile with LLVM's optimisations off
(``--xla_backend_optimization_level=0``, in every worker and the reference alike: about 2.5x faster to
compile); the slow ones use XLA's default flags.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import Mesh

from jaxclust.dpmm import distributed
from jaxclust.errors import DistributedError, InvalidInputError, InvalidInputTypeError

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import distributed_worker as worker  # noqa: E402

WORKER = HERE / "distributed_worker.py"
ENV_VARS = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAST_COMPILE = "--xla_backend_optimization_level=0"


def _spawn(cmd, env: dict, cwd=None) -> tuple:
    """A process whose output goes to temporary files (a pipe nobody reads could fill up and block it)."""
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    return subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=cwd), out, err


def _clean_env(local_devices: int = 1, flags: str = "") -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    xla_flags = f"--xla_force_host_platform_device_count={local_devices} {flags}".strip()
    return dict(env, JAX_PLATFORMS="cpu", XLA_FLAGS=xla_flags)


def _job(address: str, n_processes: int, pid: int) -> dict:
    """A process's place in the job, by the environment variables the README documents."""
    return dict(JAX_COORDINATOR_ADDRESS=address, JAX_NUM_PROCESSES=str(n_processes), JAX_PROCESS_ID=str(pid))


def _start(n_processes: int, cases: str, local_devices: int = 1, extra: tuple = (), flags: str = "") -> list:
    """Start the workers (``n_processes = 0``: one worker without jax.distributed)."""
    env = _clean_env(local_devices, flags)
    address = f"127.0.0.1:{_free_port()}"
    cmd = [sys.executable, str(WORKER), "--cases", cases, *extra]
    if not n_processes:
        return [_spawn(cmd, env)]
    return [_spawn(cmd, {**env, **_job(address, n_processes, pid)}) for pid in range(n_processes)]


def _read(f) -> str:
    f.seek(0)
    return f.read()


def _wait(procs, timeout: float) -> list[tuple[str, str]]:
    """Every process's (stdout, stderr); fails (after stopping them all) when one fails or the deadline
    passes."""
    deadline = time.monotonic() + timeout
    try:
        while any(p.poll() is None for p, _, _ in procs):
            failed = any(p.poll() not in (None, 0) for p, _, _ in procs)
            if failed or time.monotonic() > deadline:
                why = "failed" if failed else f"did not finish within {timeout:.0f} s"
                for p, _, _ in procs:
                    if p.poll() is None:
                        p.kill()
                for p, _, _ in procs:
                    p.wait(timeout=30)
                tails = "\n".join(
                    f"--- process {i}:\n{_read(e)[-3000:]}" for i, (_, _, e) in enumerate(procs)
                )
                pytest.fail(f"processes {why}\n{tails}")
            time.sleep(0.2)
        return [(_read(out), _read(err)) for _, out, err in procs]
    finally:
        for p, out, err in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
            out.close()
            err.close()


def _results(outputs: list[tuple[str, str]]) -> list[dict]:
    results = []
    for i, (out, _) in enumerate(outputs):
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert lines, f"process {i} printed no result"
        results.append(json.loads(lines[-1][len("RESULT ") :]))
    return results


def _run(n_processes: int, cases: list[str], *, local_devices=1, extra=(), timeout=420, ref=True, flags=""):
    """The workers' results, and the single-process reference (a worker without jax.distributed, same flags)
    run at the same time."""
    procs = _start(n_processes, ",".join(cases), local_devices, extra, flags)
    if ref:
        procs += _start(0, ",".join(cases), 1, extra, flags)
    results = _results(_wait(procs, timeout))
    if not ref:
        return results, {}
    assert results[-1]["processes"] == 1
    return results[:-1], {name: results[-1][name] for name in cases}


def _assert_same(got: dict, ref: dict) -> None:
    assert "error" not in got, got
    for key in ("samples", "final_labels"):
        np.testing.assert_array_equal(np.array(got[key]), np.array(ref[key]), err_msg=key)
    for key in ("labels", "n_components"):
        if key in ref:
            np.testing.assert_array_equal(np.array(got[key]), np.array(ref[key]), err_msg=key)
    for key in ("capacity", "n_capacity_growths", "n_overflow_redos"):
        assert got[key] == ref[key], (key, got[key], ref[key])
    for key in ("log_joint", "alpha", "trace_log_joint", "trace_alpha"):
        if key in ref:
            np.testing.assert_allclose(got[key], ref[key], rtol=2e-5, err_msg=key)


def _assert_sampler_did_something(ref: dict, case: str) -> None:
    """The compared runs are not trivial: several components, chains that move, constraints that hold in
    every sample, and ("grown") slots that grew."""
    samples = np.array(ref["samples"]).reshape(-1, worker.N_ITEMS)
    assert samples.max() >= 1  # more than one component
    assert len({tuple(s) for s in samples}) > 1  # the retained samples differ
    _, c, _ = worker.make_case(case)
    if c is not None:
        assert all(not c.check_assignment(s) for s in samples)
    if case == "grown":
        assert ref["n_capacity_growths"] >= 1


def test_two_processes_equal_one_process_with_and_without_cannot_links():
    """Two processes, one CPU device each, the rows of the sub-cluster sampler split over them (173 rows:
    one padding row): ``DPMM(mesh="all")`` without constraints, and ``sample(mesh="all")`` with must-links,
    cannot-links and soft answers across the two halves and alpha inferred."""
    results, refs = _run(2, ["plain", "constrained"], flags=FAST_COMPILE)
    assert [r["process"] for r in results] == [0, 1]
    assert all(r["processes"] == 2 and r["devices"] == 2 for r in results)
    for name in ("plain", "constrained"):
        _assert_sampler_did_something(refs[name], name)
        for r in results:
            _assert_same(r[name], refs[name])


def test_collapsed_chains_split_over_two_processes():
    """The collapsed sampler's chains over two processes: 3 chains padded to 4, the padding dropped; each
    process returns the single-process chains."""
    results, refs = _run(2, ["collapsed"], flags=FAST_COMPILE)
    ref = refs["collapsed"]
    assert np.array(ref["samples"]).shape[0] == 3
    for r in results:
        _assert_same(r["collapsed"], ref)


def test_processes_given_different_data_stop_with_a_named_error():
    """Process 1 changes one value of X: every process raises DistributedError naming X and process 1
    (before anything is compiled), instead of sampling a mixture of two data sets."""
    results, _ = _run(2, ["plain"], extra=("--perturb-on", "1"), ref=False, timeout=240)
    for r in results:
        assert r["plain"]["error"] == "DistributedError", r["plain"]
        assert "process 1" in r["plain"]["message"] and "X" in r["plain"]["message"]


@pytest.mark.slow
def test_four_processes_equal_one_process():
    """Four processes (173 rows: three padding rows on the last device), with and without cannot-links."""
    results, refs = _run(4, ["plain", "constrained"], timeout=600)
    assert [r["process"] for r in results] == [0, 1, 2, 3]
    for name in ("plain", "constrained"):
        for r in results:
            _assert_same(r[name], refs[name])


@pytest.mark.slow
def test_two_processes_of_two_devices_with_the_split_launch_subsampled():
    """Two processes of two CPU devices each (a mesh of 4 mixing local and cross-process collectives), with the
    split launch's 2-means on a subsample (SUBSAMPLE lowered to 64 < 173 rows: the sampled rows are gathered
    to every device), and slots that grow while sampling (a re-placement of the row-split states)."""
    results, refs = _run(2, ["grown"], local_devices=2, extra=("--subsample", "64"), timeout=600)
    assert all(r["devices"] == 4 for r in results)
    _assert_sampler_did_something(refs["grown"], "grown")
    for r in results:
        _assert_same(r["grown"], refs["grown"])


@pytest.mark.slow
def test_readme_script_on_two_processes_equals_one_process(tmp_path):
    """The README's multi-process script, run as written: two processes given their places by the environment
    variables, and once alone (no settings: a warning, one process). Both write the same labels."""
    text = (HERE.parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    script = tmp_path / "fit.py"
    script.write_text(next(b for b in blocks if "distributed.initialize()" in b), encoding="utf-8")
    X, _, _ = worker.make_case("plain")
    address = f"127.0.0.1:{_free_port()}"
    runs = []
    for name, job in (("p0", _job(address, 2, 0)), ("p1", _job(address, 2, 1)), ("alone", {})):
        (tmp_path / name).mkdir()
        np.save(tmp_path / name / "features.npy", X)
        runs.append(_spawn([sys.executable, str(script)], {**_clean_env(), **job}, cwd=tmp_path / name))
    outputs = _wait(runs, 600)
    assert "running as one process" in outputs[2][1]  # the warning of initialize() without settings
    labels = np.load(tmp_path / "p0" / "labels.npy")
    assert not (tmp_path / "p1" / "labels.npy").exists()  # only process 0 writes
    np.testing.assert_array_equal(labels, np.load(tmp_path / "alone" / "labels.npy"))
    assert labels.shape == (worker.N_ITEMS,) and labels.max() >= 1


def test_initialize_without_any_settings_runs_as_one_process():
    """No settings and no Slurm/Open MPI job: ``initialize()`` warns and returns (0, 1), so the README script
    also runs on a laptop."""
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS and not k.startswith(("SLURM_", "OMPI_"))}
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "from jaxclust.dpmm import distributed\n"
        "print(distributed.initialize())\n"
        "import jax; print(jax.process_count())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(env, JAX_PLATFORMS="cpu"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["(0,", "1)", "1"]
    assert "JaxclustWarning" in out.stderr and "running as one process" in out.stderr


# ---- in-process: settings and errors --------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_initialize_names_a_process_count_mismatch(clean_env):
    clean_env.setenv("JAX_NUM_PROCESSES", "3")
    with pytest.raises(DistributedError, match="num_processes=2 but JAX_NUM_PROCESSES=3"):
        distributed.initialize("127.0.0.1:12355", num_processes=2, process_id=0)


def test_initialize_names_bad_settings(clean_env):
    clean_env.setenv("JAX_PROCESS_ID", "one")
    with pytest.raises(InvalidInputError, match="JAX_PROCESS_ID: expected an int >= 0, got 'one'"):
        distributed.initialize("127.0.0.1:12355", num_processes=2)
    clean_env.delenv("JAX_PROCESS_ID")
    with pytest.raises(InvalidInputError, match="process_id: expected 0 .. 1, got 2"):
        distributed.initialize("127.0.0.1:12355", num_processes=2, process_id=2)
    with pytest.raises(InvalidInputError, match="coordinator_address: expected 'host:port'"):
        distributed.initialize("localhost", num_processes=2, process_id=0)
    with pytest.raises(InvalidInputError, match="cpu_collectives"):
        distributed.initialize("127.0.0.1:12355", num_processes=2, process_id=0, cpu_collectives="nccl")


def test_initialize_after_jax_started_is_a_named_error_and_changes_nothing(clean_env):
    jax.devices()  # this process's backend is up
    before = jax.config.jax_cpu_collectives_implementation
    with pytest.raises(DistributedError, match="must start before JAX runs anything"):
        distributed.initialize("127.0.0.1:12355", num_processes=2, process_id=0, cpu_collectives="mpi")
    assert jax.config.jax_cpu_collectives_implementation == before
    assert not jax.distributed.is_initialized()
    # one process needs no runtime
    assert distributed.initialize(num_processes=1) == (0, 1)


def test_resolve_mesh_names_bad_meshes():
    mesh = distributed.resolve_mesh("all")
    assert mesh.axis_names == (distributed.ROW_AXIS,) and mesh.size == jax.device_count()
    with pytest.raises(
        InvalidInputError, match="mesh: expected None, 'all' or a jax.sharding.Mesh, got 'al'"
    ):
        distributed.resolve_mesh("al")
    with pytest.raises(InvalidInputTypeError, match="mesh: expected .* got int"):
        distributed.resolve_mesh(4)
    two_axes = Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("a", "b"))
    with pytest.raises(InvalidInputError, match=r"mesh: expected one axis .* got axes \('a', 'b'\)"):
        distributed.resolve_mesh(two_axes)
