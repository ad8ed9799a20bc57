"""workloads.data_file: real data come only from $PYDP_SYNOPSIS_DATA or the package."""
import pytest

import workloads


def test_without_the_variable_only_the_packaged_data_are_found(monkeypatch, tmp_path):
    monkeypatch.delenv(workloads.DATA_ENV, raising=False)
    assert workloads.data_dir() is None
    assert workloads.data_file("zipcodes.npz").parts[-3:] == ("pydp_synopsis", "data", "zipcodes.npz")
    assert workloads.data_file("flights-2001h1.npz", required=False) is None
    with pytest.raises(SystemExit) as stop:
        workloads.data_file("flights-2001h1.npz")
    message = str(stop.value)
    assert "\n" not in message and "PYDP_SYNOPSIS_DATA is not set" in message


def test_the_variable_names_the_directory(monkeypatch, tmp_path):
    monkeypatch.setenv(workloads.DATA_ENV, str(tmp_path))
    with pytest.raises(SystemExit, match=f"PYDP_SYNOPSIS_DATA={tmp_path} has no flights"):
        workloads.data_file("flights-2001h1.npz")
    (tmp_path / "flights-2001h1.npz").write_bytes(b"")
    (tmp_path / "zipcodes.npz").write_bytes(b"")
    assert workloads.data_file("flights-2001h1.npz") == tmp_path / "flights-2001h1.npz"
    assert workloads.data_file("zipcodes.npz") == tmp_path / "zipcodes.npz"
