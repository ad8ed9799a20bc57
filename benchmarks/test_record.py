"""benchmarks/record.py keeps a benchmark's output with its command, and the docs build shows it."""
import json
import sys
from pathlib import Path

import pytest

import record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
hooks = pytest.importorskip("hooks", reason="the docs extra (mkdocs) is not installed")


def test_record_writes_command_output_and_machine(tmp_path, capsys):
    path = record.record("bench_noise.py", ["--size", "2000", "--repeat", "1"], "noise-tiny",
                         out_dir=tmp_path)
    assert path == tmp_path / "noise-tiny.json"
    result = json.loads(path.read_text())
    # the bench tier points $PYDP_SYNOPSIS_DATA at tests/data: the command says so
    assert result["command"].endswith("python benchmarks/bench_noise.py --size 2000 --repeat 1")
    assert "discrete_laplace vs numpy" in result["output"]
    assert result["output"] in capsys.readouterr().out           # shown as it ran
    assert result["machine"]["cores"] >= 1 and result["seconds"] >= 0
    block = hooks.measured_block(result)
    assert result["command"] in block and result["output"] in block and result["date"] in block


def test_a_failing_benchmark_writes_nothing(tmp_path):
    with pytest.raises(SystemExit) as info:
        record.record("bench_noise.py", ["--size", "not-a-number"], "bad", out_dir=tmp_path)
    assert info.value.code not in (0, None)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("script, name", [("../setup.py", None), ("bench_noise.py", "../x"),
                                          ("missing.py", None)])
def test_bad_script_or_name_refused(tmp_path, script, name):
    with pytest.raises(SystemExit, match="record.py"):
        record.record(script, [], name, out_dir=tmp_path)


def test_every_measured_line_of_the_docs_has_its_result():
    pages = list((ROOT / "docs").rglob("*.md"))
    named = {m.group(1) for p in pages for m in hooks._MEASURED.finditer(p.read_text())}
    for name in named:
        result = json.loads((ROOT / "docs" / "measured" / f"{name}.json").read_text())
        assert set(result) >= {"command", "output", "date", "commit", "machine", "seconds"}
        assert "python benchmarks/" in result["command"]
