"""The grid runner: one atomic record per run, resume after a kill, damaged records re-run, partial summaries,
one runner per folder, the command line, and Ray (a local instance, skipped when Ray is not installed)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jaxclust.apps.cli import app
from jaxclust.apps.experiment import load_records, register_kind, run_grid
from jaxclust.apps.experiment.runner import _lock, read_record
from jaxclust.errors import MissingDependencyError, StoreLockedError

FAKE = Path(__file__).resolve().parent / "fake_kinds.py"
REPO = Path(__file__).resolve().parents[3]


def slow_config(
    tmp_path: Path, n: int = 6, delay: float = 0.0, fail_on: int | None = None, exit_on: int | None = None
) -> Path:
    """A grid of ``n`` runs of the slow fake kind; run ``fail_on`` raises while ``tmp_path/flag`` exists, run
    ``exit_on`` calls ``sys.exit(3)``."""
    cfg = tmp_path / "slow.toml"
    extra = f'fail_on = {fail_on}\nfail_flag = "{tmp_path / "flag"}"\n' if fail_on is not None else ""
    extra += f"exit_on = {exit_on}\n" if exit_on is not None else ""
    cfg.write_text(
        f'kind = "{FAKE}:slow"\n[fixed]\ndelay = {delay}\nmarkers = "{tmp_path / "markers"}"\n{extra}'
        f"[grid]\ni = {list(range(n))}\n"
    )
    return cfg


def calls(tmp_path: Path) -> dict[int, int]:
    """How many times each run ``i`` was computed (its marker files, across processes)."""
    counts: dict[int, int] = {}
    for p in (tmp_path / "markers").glob("*"):
        i = int(p.name.split(".")[0])
        counts[i] = counts.get(i, 0) + 1
    return counts


def results(out: Path) -> dict[int, int]:
    finished, _ = load_records(out)
    return {r["params"]["i"]: r["result"]["square"] for r in finished}


def test_local_grid_writes_a_record_per_run_and_summarises(tmp_path):
    out = tmp_path / "out"
    report = run_grid(slow_config(tmp_path, 4), out, progress=False)
    assert (report.total, report.skipped, report.ran, report.failed) == (4, 0, 4, [])
    files = sorted(p.name for p in (out / "runs").iterdir())
    assert len(files) == 4 and all(f.startswith("i-") and f.endswith(".json") for f in files)
    assert results(out) == {0: 0, 1: 1, 2: 4, 3: 9}
    rec, reason = read_record(next((out / "runs").glob("i-3-*.json")))
    assert reason == "" and rec["result"] == {"square": 9, "curve": [3, 4]} and rec["seconds"] >= 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["n_planned"], summary["n_finished"], summary["missing"]) == (4, 4, [])
    assert summary["kinds"][f"{FAKE}:slow"] == {"files": ["fake_summary.json"], "n": 4}
    assert json.loads((out / "fake_summary.json").read_text())["total"] == 0 + 1 + 4 + 9
    rows = (out / "summary.csv").read_text().splitlines()
    assert rows[0].startswith("id,seconds,delay,markers,i,result.square") and len(rows) == 5
    # a second invocation computes nothing
    again = run_grid(slow_config(tmp_path, 4), out, progress=False)
    assert (again.skipped, again.ran) == (4, 0)
    assert calls(tmp_path) == {0: 1, 1: 1, 2: 1, 3: 1}


def test_resume_after_kill_recomputes_only_unfinished_runs(tmp_path):
    cfg, out = slow_config(tmp_path, 8, delay=0.3), tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "jaxclust.apps.cli",
        "experiment",
        "run",
        str(cfg),
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(list((out / "runs").glob("i-*.json"))) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the grid did not start"
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)  # no clean-up of any kind
        proc.wait(timeout=30)
    done_before = results(out)
    assert 2 <= len(done_before) < 8
    calls_before = calls(tmp_path)
    report = run_grid(cfg, out, progress=False)  # the same grid again
    assert (report.skipped, report.ran, report.failed) == (len(done_before), 8 - len(done_before), [])
    after = calls(tmp_path)
    for i in range(8):
        if i in done_before:
            assert after[i] == 1, f"finished run {i} was computed again"
        else:
            assert after[i] == calls_before.get(i, 0) + 1
    assert results(out) == {i: i * i for i in range(8)}
    assert not list((out / "runs").glob(".*"))  # no temporary file left behind


def test_damaged_records_are_set_aside_and_run_again(tmp_path):
    cfg, out = slow_config(tmp_path, 5), tmp_path / "out"
    run_grid(cfg, out, progress=False, summarize=False)
    path = {i: next((out / "runs").glob(f"i-{i}-*.json")) for i in range(5)}
    text = path[1].read_text()
    path[1].write_text(text[: len(text) // 2])  # half-written
    path[2].write_bytes(b"\x00" * 64)  # a zeroed block
    rec = json.loads(path[3].read_text())
    rec["params"]["i"] = 30  # edited: no longer the run its name says
    path[3].write_text(json.dumps(rec))
    rec = json.loads(path[4].read_text())
    rec["status"] = "running"
    path[4].write_text(json.dumps(rec))
    stale = out / "runs" / f".{path[0].name}.tmp.999999999"  # left by a killed runner (no such pid)
    stale.write_text('{"format": "jaxclust-experiment-run/1"')
    with pytest.warns(UserWarning) as caught:
        report = run_grid(cfg, out, progress=False)
    reasons = sorted(str(w.message).split("/runs/")[1] for w in caught)
    assert len(reasons) == 4 and all("and the run will be run again" in r for r in reasons)
    assert re.match(
        r"i-1-\w+\.json: not readable JSON \(JSONDecodeError.*moved to i-1-\w+\.json\.corrupt", reasons[0]
    )
    assert "not readable JSON" in reasons[1] and "its parameters do not match its id" in reasons[2]
    assert "not a finished run" in reasons[3]
    assert (report.skipped, report.ran) == (1, 4)
    assert calls(tmp_path) == {0: 1, 1: 2, 2: 2, 3: 2, 4: 2}
    assert results(out) == {i: i * i for i in range(5)}
    assert sorted(p.name.split("-")[1] for p in (out / "runs").glob("*.corrupt")) == ["1", "2", "3", "4"]
    assert (out / "runs" / (path[1].name + ".corrupt")).read_text() == text[: len(text) // 2]  # kept as found
    assert not stale.exists()


def test_failed_runs_are_recorded_and_the_summary_uses_the_runs_that_exist(tmp_path):
    out, cfg = tmp_path / "out", slow_config(tmp_path, 4, fail_on=2)
    (tmp_path / "flag").touch()
    report = run_grid(cfg, out, progress=False)
    assert report.ran == 3 and len(report.failed) == 1 and report.failed[0].startswith("i-2-")
    failed_file = next((out / "runs").glob("i-2-*.failed.json"))
    failed = json.loads(failed_file.read_text())
    assert failed["error"] == "RuntimeError: run 2 fails on purpose" and "Traceback" in failed["traceback"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_finished"] == 3 and summary["missing"] == report.failed
    assert summary["failed"] == [{"id": report.failed[0], "error": "RuntimeError: run 2 fails on purpose"}]
    assert json.loads((out / "fake_summary.json").read_text())["total"] == 0 + 1 + 9
    # a partial grid: the summary and the kind's files are made from the runs that exist
    next((out / "runs").glob("i-3-*.json")).unlink()
    result = CliRunner().invoke(app, ["experiment", "summarize", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 finished run(s) of 4 planned, 2 missing" in result.output
    assert json.loads((out / "fake_summary.json").read_text())["total"] == 0 + 1
    # the cause fixed, the same command runs the failed and the missing runs only
    (tmp_path / "flag").unlink()
    report = run_grid(cfg, out, progress=False)
    assert (report.skipped, report.ran, report.failed) == (2, 2, [])
    assert calls(tmp_path) == {0: 1, 1: 1, 2: 2, 3: 2}
    assert results(out) == {0: 0, 1: 1, 2: 4, 3: 9} and not failed_file.exists()


def test_a_run_that_calls_sys_exit_is_a_failed_run_and_the_grid_goes_on(tmp_path):
    out, cfg = tmp_path / "out", slow_config(tmp_path, 4, exit_on=1)
    report = run_grid(cfg, out, progress=False)
    assert report.ran == 3 and len(report.failed) == 1 and report.failed[0].startswith("i-1-")
    failed = json.loads(next((out / "runs").glob("i-1-*.failed.json")).read_text())
    assert failed["error"] == "SystemExit: 3" and "Traceback" in failed["traceback"]
    assert results(out) == {0: 0, 2: 4, 3: 9}
    assert json.loads((out / "summary.json").read_text())["n_finished"] == 3


def test_fail_fast_stops_at_the_first_failure(tmp_path):
    (tmp_path / "flag").touch()
    report = run_grid(slow_config(tmp_path, 5, fail_on=1), tmp_path / "out", progress=False, fail_fast=True)
    assert report.ran == 1 and len(report.failed) == 1
    assert calls(tmp_path) == {0: 1, 1: 1}


def test_one_runner_per_folder(tmp_path):
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    with _lock(out), pytest.raises(StoreLockedError, match=r"in use by another grid runner \(pid \d+"):
        run_grid(slow_config(tmp_path, 2), out, progress=False)
    assert calls(tmp_path) == {}


def test_registered_kind_by_name(tmp_path):
    register_kind("fake_fast_test", f"{FAKE}:fast")
    cfg = tmp_path / "fast.toml"
    cfg.write_text('kind = "fake_fast_test"\n[grid]\nx = [1, 2]\nseed = [0, 5]\n')
    run_grid(cfg, tmp_path / "out", progress=False)
    got = sorted(r["result"]["value"] for r in load_records(tmp_path / "out")[0])
    assert got == [11, 16, 21, 26]


def test_cli_errors_are_one_line_with_exit_code_2(tmp_path, monkeypatch):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(f'kind = "{FAKE}:slow"\n[grid]\ni = 3\n')
    result = CliRunner().invoke(app, ["experiment", "run", str(cfg), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert (
        result.output == f"error: {cfg}: grid.i (line 3): a grid axis must be a list of values, got int 3 "
        "(put a single value in [fixed])\n"
    )
    assert not (tmp_path / "o").exists()  # checked before anything is created
    # Ray missing: a named error, one line saying what to install
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(
        MissingDependencyError, match=r'--ray: Ray is not installed.*pip install "jaxclust\[ray\]"'
    ):
        run_grid(slow_config(tmp_path, 2), tmp_path / "o", ray=True)
    result = CliRunner().invoke(
        app,
        [
            "experiment",
            "run",
            str(slow_config(tmp_path, 2)),
            "--out",
            str(tmp_path / "o"),
            "--ray-address",
            "auto",
        ],
    )
    assert result.exit_code == 2
    assert (
        result.output
        == 'error: --ray-address: Ray is not installed; install the extra with: pip install "jaxclust[ray]"\n'
    )
    assert calls(tmp_path) == {} and not (tmp_path / "o").exists()


def test_unreachable_ray_cluster_is_one_line_with_exit_code_2(tmp_path, monkeypatch):
    import types

    fake = types.ModuleType("ray")
    fake.is_initialized = lambda: False

    def init(**kwargs):
        assert kwargs == {"address": "10.0.0.1:6379"}  # a cluster is connected to, not started
        raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379\nmore detail")

    fake.init = init
    monkeypatch.setitem(sys.modules, "ray", fake)
    cfg = slow_config(tmp_path, 2)
    cmd = ["experiment", "run", str(cfg), "--out", str(tmp_path / "o"), "--ray-address", "10.0.0.1:6379"]
    result = CliRunner().invoke(app, cmd)
    assert result.exit_code == 2
    assert result.output == (
        "error: --ray-address 10.0.0.1:6379: cannot connect to Ray (ConnectionError: Failed to connect to Ray "
        "cluster at 10.0.0.1:6379)\n"
    )
    assert calls(tmp_path) == {} and not (tmp_path / "o").exists()


def test_quick_without_a_quick_table_and_missing_folders_are_refused(tmp_path):
    cfg = slow_config(tmp_path, 2)
    result = CliRunner().invoke(app, ["experiment", "run", str(cfg), "--quick", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert result.output == f"error: --quick: {cfg} has no [quick] table (what --quick changes)\n"
    result = CliRunner().invoke(app, ["experiment", "summarize", str(tmp_path / "nowhere")])
    assert (
        result.exit_code == 2
        and result.output == f"error: {tmp_path / 'nowhere'}: no such experiment folder\n"
    )
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(app, ["experiment", "run", str(cfg), "--out", str(tmp_path / "file")])
    assert result.exit_code == 2 and "is a file, expected a folder for the runs" in result.output
    assert calls(tmp_path) == {}


def test_cli_run_list_and_failed_runs_exit_1(tmp_path):
    cfg = slow_config(tmp_path, 3, fail_on=0)
    (tmp_path / "flag").touch()
    out = tmp_path / "o"
    result = CliRunner().invoke(app, ["experiment", "list", str(cfg), "--out", str(out)])
    assert (
        result.exit_code == 0 and result.output.count("pending i-") == 3 and "3 runs, 0 done" in result.output
    )
    result = CliRunner().invoke(app, ["experiment", "run", str(cfg), "--out", str(out), "--no-progress"])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("error: 1 of 3 runs failed (i-0-")
    result = CliRunner().invoke(app, ["experiment", "list", str(cfg), "--out", str(out)])
    assert result.output.count("done    i-") == 2 and result.output.count("pending i-0-") == 1


def test_ray_grid_on_a_local_instance(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'jaxclust[ray]'); CI installs it")
    cfg, out = slow_config(tmp_path, 5), tmp_path / "out"
    run_grid(cfg, out, progress=False, summarize=False)  # here, in this process; then keep 2 of the 5
    for p in sorted((out / "runs").glob("*.json"))[2:]:
        p.unlink()
    cmd = [
        *(sys.executable, "-m", "jaxclust.apps.cli", "experiment", "run", str(cfg), "--out", str(out)),
        *("--ray", "--ray-num-cpus", "2", "--no-progress"),
    ]
    # in a subprocess: bounded in time, and the local Ray it starts (a new one, whatever else runs here) goes with it.
    # Ray gives its raylet a fixed 30 s to register; on a 2-core machine busy with the rest of the suite it can
    # miss that before any run starts, so that one failure of Ray's own start-up is tried once more.
    for _attempt in range(2):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=240)
        finally:
            proc.kill()
        if "--ray: cannot start Ray" not in err or "timed out during startup" not in err:
            break
    assert proc.returncode == 0, err
    assert "5 runs, 2 finished earlier, 3 to run (local Ray)" in err
    finished, _ = load_records(out)
    assert {r["params"]["i"]: r["result"]["square"] for r in finished} == {i: i * i for i in range(5)}
    here = [r for r in finished if r["pid"] == os.getpid()]
    on_ray = [r for r in finished if r["pid"] not in (os.getpid(), proc.pid)]
    assert len(here) == 2 and len(on_ray) == 3  # Ray ran the other three in its worker processes
    assert calls(tmp_path) == {0: 1, 1: 1, 2: 2, 3: 2, 4: 2}  # the two kept runs were not recomputed
    assert json.loads((out / "summary.json").read_text())["n_finished"] == 5
