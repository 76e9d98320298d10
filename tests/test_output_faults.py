"""Output files that cannot be written — a full disk, ``ulimit -f``, a name the file system
will not take, a folder the writer may not create its temporary file in — end the command
with one line and a non-zero exit, leave no partial file and keep an older one whole
(``sim.base.atomic``, checked up front by ``sim.cli.outputs``).

A full disk is the real one: the writer's temporary file is a link to ``/dev/full``, whose
every write fails with ENOSPC."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fixtures import one_line_error

from sim.base import atomic
from sim.base.errors import UserError
from sim.cli.outputs import Output, check_outputs

ROOT = Path(__file__).resolve().parent.parent
RELU = ROOT / "examples" / "relu_sub.py"
TILED = ROOT / "examples" / "relu_sub_tiled.py"
CASES = "op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\nTADD,f32,16,64,,,,60\n"

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """Every atomic write goes to /dev/full (through a link the writer removes)."""
    made = []

    def to_dev_full(target, folder):
        link = tmp_path / f"full{len(made)}.tmp{Path(target).suffix}"
        link.symlink_to("/dev/full")
        made.append(link)
        return str(link)

    monkeypatch.setattr(atomic, "_temporary", to_dev_full)
    return made


@pytest.mark.parametrize(
    "args, out",
    [
        (["run", RELU, "--trace", "t.csv"], "t.csv"),
        (["run", RELU, "--trace", "t.parquet"], "t.parquet"),
        (["run", RELU, "--trace", "t.json"], "t.json"),
        (["run", RELU, "--plot", "p.png"], "p.png"),
        (["run", RELU, "--output", "out=z.npy"], "z.npy"),
    ],
)
def test_a_full_disk_is_one_line_and_leaves_the_older_file(cli, tmp_path, full_disk, args, out):
    (tmp_path / out).write_bytes(b"older")
    line = one_line_error(*cli(*args)[::2], out, "No space left on device")
    assert "the earlier file is left as it was" in line
    assert (tmp_path / out).read_bytes() == b"older"
    assert full_disk and not any(p.is_symlink() for p in full_disk)  # the writer's temp removed


def test_a_full_disk_under_sweep_output_is_one_line(cli, tmp_path, full_disk):
    code, _, err = cli(
        "sweep", TILED, "--param", "rows=16", "--param", "height=64", "--param", "width=64",
        "--workers", "1", "-o", "s.parquet",
    )  # fmt: skip
    one_line_error(code, err, "s.parquet", "No space left on device", "nothing was written")
    assert not (tmp_path / "s.parquet").exists()


def test_calibrate_on_a_full_disk_leaves_no_model_folder(cli, tmp_path, monkeypatch):
    import sim.studies.calibrate as calibrate

    class _Full:
        def __init__(self, f):
            pass

        def writerow(self, row):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(calibrate.csv, "writer", _Full)
    (tmp_path / "c.csv").write_text(CASES)
    one_line_error(*cli("calibrate", "c.csv", "-o", "m")[::2], "m", "No space left on device")
    assert sorted(os.listdir(tmp_path)) == ["c.csv"]  # no model folder, no temporary one


def test_a_file_size_limit_is_one_line(tmp_path):
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))\n"
        "from sim.cli import main\n"
        f"sys.exit(main(['run', {str(RELU)!r}, '--trace', 't.csv']))\n"
    )
    env = {**os.environ, "PTOSIM_CACHE_DIR": ""}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "ptosim: error: t.csv: cannot write: File too large (nothing was written)"
    ]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("length", [250, 300])
def test_long_file_names(cli, tmp_path, length):
    name = "a" * (length - 4) + ".csv"
    code, out, err = cli("run", RELU, "--trace", name)
    if length <= 255:  # the file system takes it: so must the writer's temporary name
        assert code == 0, err
        assert (tmp_path / name).is_file()
    else:
        one_line_error(code, err, "--trace", "File name too long")


def test_the_check_up_front_does_what_the_writer_does(tmp_path, monkeypatch):
    existing = tmp_path / "t.csv"
    existing.write_text("older")

    def no_temporary(target, folder):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))

    monkeypatch.setattr(atomic, "_temporary", no_temporary)
    with pytest.raises(UserError, match=r"--trace .*t.csv: cannot write there: Permission denied"):
        check_outputs([Output("--trace", existing)])


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_existing_output_in_a_read_only_folder_is_refused_up_front(cli, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "t.csv").write_text("older")
    folder.chmod(0o555)
    try:
        one_line_error(*cli("run", RELU, "--trace", "ro/t.csv")[::2], "Permission denied")
    finally:
        folder.chmod(0o755)
