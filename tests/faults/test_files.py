"""Results on disk: tampered and extra files, symbolic links, modes for a shared filesystem, no dashboard."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.faultkit import DRIVER, PATHS, ROOT, assert_complete_runs_are_whole, complete_runs, run_cli
from tests.paths import child_env
from tests.faults.faultstudy import executions, set_behaviour
from qkov.cli.main import cli


def _study(out: Path, capsys) -> tuple[int, str, str]:
    rc = run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_tampered_and_extra_files(tmp_path, scratch, shared_cluster, capsys):
    """Promise: a run whose listed file was edited or deleted after the fact reads incomplete and is redone
    alone; files nobody listed -- an unlisted (even unreadable) JSON dropped into a complete run, a stray
    file and a stray directory in runs/ -- change nothing: the run is reused, the report is built and
    shows none of their content (before, an unlisted bad JSON crashed the report)."""
    out = tmp_path / "out"
    set_behaviour(scratch, payload=2048)
    assert _study(out, capsys)[0] == 0
    runs = sorted((out / "runs").iterdir())
    edited, deleted, extra = runs[0], runs[1], runs[2]
    data = bytearray((edited / "payload.bin").read_bytes())
    data[100] ^= 0xFF                                             # one flipped bit, same size and mtime order
    (edited / "payload.bin").write_bytes(bytes(data))
    (deleted / "claims.json").unlink()
    (extra / "injected.json").write_text('{"injected_marker_9d1": 1')  # unlisted and not even valid JSON
    (extra / "injected_fig.svg").write_text("<svg><script>alert(1)</script></svg>")
    (out / "runs" / "notes.txt").write_text("a stray file\n")
    (out / "runs" / "old-run-xyz").mkdir()
    before = complete_runs(out)

    rc, text, err = _study(out, capsys)
    assert rc == 0, err
    runs_line = next(x for x in text.splitlines() if x.startswith("runs:"))
    assert runs_line.startswith("runs: 2 executed, 4 reused (already complete), 2 incomplete redone"), runs_line
    assert executions(scratch, edited.name) == 2 and executions(scratch, deleted.name) == 2
    assert all(executions(scratch, r.name) == 1 for r in runs[2:])
    assert complete_runs(out)[extra.name] == before[extra.name]
    assert_complete_runs_are_whole(out, payload=2048)
    for name in ("report.html", "report.md"):
        page = (out / name).read_text()
        assert "injected_marker_9d1" not in page and "alert(1)" not in page
    assert (out / "runs" / "notes.txt").exists() and (out / "runs" / "old-run-xyz").is_dir()


def test_symlinked_run_directory_is_refused_with_one_line(tmp_path, scratch, shared_cluster, capsys):
    """Promise: a run directory that is a symbolic link is refused before any work with one line naming
    the link, exit 2, and nothing behind the link is deleted (before: exit 1, `Cannot call rmtree on a
    symbolic link`)."""
    out = tmp_path / "out"
    set_behaviour(scratch)
    assert _study(out, capsys)[0] == 0
    victim = sorted((out / "runs").iterdir())[0]
    elsewhere = tmp_path / "elsewhere"
    victim.rename(elsewhere)
    (elsewhere / "COMPLETE").unlink()            # the target is incomplete: before, reproduce tried to delete it
    (elsewhere / "keep.txt").write_text("mine")
    victim.symlink_to(elsewhere, target_is_directory=True)
    rc, text, err = _study(out, capsys)
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"qkov: error: out: {victim}: a symbolic link") and str(elsewhere) in lines[0]
    assert text == "" and (elsewhere / "keep.txt").read_text() == "mine" and victim.is_symlink()


_PERMS_DRIVER = DRIVER.replace('if __name__ == "__main__":', '''import os
if __name__ == "__main__":
    os.umask(int(sys.argv[1], 8))''')


@pytest.mark.parametrize("umask, file_mode, dir_mode", [(0o027, 0o640, 0o750)])  # 022 -> 0644/0755 likewise
def test_modes_follow_the_umask_and_the_local_cluster_serves_no_dashboard(tmp_path, scratch, umask, file_mode,
                                                                          dir_mode):
    """Promise: everything a study writes (runs, summary, report) is readable by others on a shared
    filesystem: files 0666 & ~umask (0644 under umask 022), directories 0777 & ~umask (0755), none 0600;
    and the local cluster starts no dashboard: even with port 8787 taken, no "Port 8787 is already in
    use" warning (before: the scheduler and every worker started an HTTP dashboard server)."""
    blocker = socket.socket()
    try:
        blocker.bind(("", 8787))
        blocker.listen(1)
    except OSError:
        pass  # already taken by someone else: the same situation
    out = tmp_path / "out"
    script = tmp_path / "perms_driver.py"
    script.write_text(_PERMS_DRIVER.format(paths=PATHS, out=str(out)))
    try:
        r = subprocess.run([sys.executable, str(script), oct(umask)], cwd=ROOT, env=child_env(),
                           capture_output=True, text=True, timeout=120)
    finally:
        blocker.close()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "8787" not in r.stderr and "already in use" not in r.stderr and "dashboard" not in r.stderr.lower()
    paths = [out, *out.rglob("*")]
    assert len(paths) > 6 * 5
    for p in paths:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (dir_mode if p.is_dir() else file_mode), (p, oct(mode))
