"""The README's Python snippet runs as a script and prints what the README says it prints."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def test_python_blocks_are_found():
    text = "intro\n```python\nprint(1)\n```\n```bash\nls\n```\n```python\nx = 2\n```\n"
    assert python_blocks(text) == ["print(1)\n", "x = 2\n"]


def test_readme_snippet_runs_as_a_script_and_prints_its_results(tmp_path, capsys, monkeypatch):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    # the quick start, the chat model first (below), and the multi-process script (run by
    # tests/dpmm/test_dpmm_distributed.py)
    assert len(blocks) == 3, "three Python snippets expected; give a new one its own test"
    assert "MachineFirst" in blocks[1] and "distributed.initialize()" in blocks[2]
    script = tmp_path / "quickstart.py"
    script.write_text(blocks[0], encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(
        str(script), run_name="__main__"
    )  # as `python quickstart.py`, sharing this process's jit cache
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "wines 1 and 59: cannot"
    assert re.fullmatch(r"DPMM: \d+ components, ARI -?\d\.\d+", out[1])
    # every retained sample obeys the constraints: the must-linked pair always together, the cannot-linked never
    assert out[2] == "P(0 with 1) = 1.0  P(0 with 59) = 0.0"
    assert re.fullmatch(r"k-means ARI 0\.\d+", out[3])
    # twenty right answers improve the clustering the DPMM found without them
    after = re.fullmatch(r"after 20 answers: \d+ clusters, ARI (-?\d\.\d+)", out[4])
    assert after and float(after.group(1)) > float(out[1].rsplit(" ", 1)[1]) + 0.1
    assert len(out) == 5
    # the numbers the README's prose states are the numbers the snippet prints (to its two decimals)
    prose = re.search(
        r"splits the three cultivars into (\d+) components \(ARI (\d\.\d\d), where k-means, told k = 3, has "
        r"(\d\.\d\d)\); 20 answers bring it to (\d+) clusters and ARI (\d\.\d\d)",
        " ".join(README.read_text(encoding="utf-8").split()),
    )
    assert prose, "the README's sentence about the quick start's numbers was not found"
    dpmm = re.fullmatch(r"DPMM: (\d+) components, ARI (-?\d\.\d+)", out[1])
    printed = (
        dpmm.group(1),
        f"{float(dpmm.group(2)):.2f}",
        f"{float(out[3].rsplit(' ', 1)[1]):.2f}",
        re.search(r"(\d+) clusters", out[4]).group(1),
        f"{float(after.group(1)):.2f}",
    )
    assert prose.groups() == printed, f"README states {prose.groups()}, the snippet prints {printed}"


def test_the_chat_model_snippet_runs_against_a_stand_in_server(tmp_path, monkeypatch):
    """The README's "chat model first" snippet, with the stand-in server's address for the local server's and a
    gold oracle for the person at the terminal."""
    import numpy as np

    from jaxclust import DPMM
    from jaxclust.active import ActiveLearner, AnswerStore, GoldOracle
    from jaxclust.active.chat_fake import FakeChatServer

    block = python_blocks(README.read_text(encoding="utf-8"))[1]
    assert '"http://127.0.0.1:8080/v1"' in block and "InteractiveOracle(texts)" in block
    labels = [0] * 5 + [1] * 5
    texts = [f"text {k}" for k in range(10)]
    X = np.concatenate([np.random.default_rng(0).normal(c, 0.2, (5, 2)) for c in (0.0, 3.0)])
    monkeypatch.chdir(tmp_path)
    with FakeChatServer(texts, labels, noise=0.2, seed=0) as server:
        code = block.replace('"http://127.0.0.1:8080/v1"', repr(server.url))
        code = code.replace("InteractiveOracle(texts)", "GoldOracle(labels)").replace(
            "DPMM()", "DPMM(n_burnin=10)"
        )
        code = code.replace(".run(X, 100)", ".run(X, 8)")
        scope = {"texts": texts, "labels": labels, "X": X, "DPMM": DPMM, "ActiveLearner": ActiveLearner}
        exec(compile(code, "README chat snippet", "exec"), {**scope, "GoldOracle": GoldOracle})
    with AnswerStore(tmp_path / "answers.sqlite") as store:
        who = {r["annotator"] for r in store.records}
    assert len(store.records) == 8 and any(w.startswith("qwen2.5-7b-instruct (prompt ") for w in who)
