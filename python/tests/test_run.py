"""tabula.run runs a spec as `tabula run` does: the same head as the CLI's run of the spec,
the CLI's progress numbers to the callback, and a second call leaves the finished run as is."""

import pytest

import tabula
from conftest import cli_json, run_cli

SPEC = """name = "tiny"
variant = "ewn:3x3x3"
seed = 3
iterations = 2
games_per_iteration = 20
[search]
simulations = 10
[eval]
games = 40
"""


def test_run_equals_the_cli_and_is_resumable(tabula_bin, tmp_path):
    spec = tmp_path / "tiny.toml"
    spec.write_text(SPEC)
    seen = []
    out = tabula.run(str(spec), db=str(tmp_path / "py.db"), threads=1, quiet=True, progress=seen.append)
    assert out["iterations"] == 2
    assert [m["iteration"] for m in seen] == [0, 1, 2]
    run_cli(tabula_bin, "--db", str(tmp_path / "cli.db"), "run", str(spec), "--threads", "2")
    shown = cli_json(tabula_bin, "--db", str(tmp_path / "cli.db"), "show", "tiny")
    assert shown["metrics"][-1]["wr_p"] == pytest.approx(seen[-1]["wr_p"], abs=0)
    cli_head = tabula.Store(str(tmp_path / "cli.db")).sql("SELECT head FROM runs_hex")["head"][0]
    assert out["head"] == cli_head
    again = tabula.run(str(spec), db=str(tmp_path / "py.db"), quiet=True)
    assert again == out
    assert len(tabula.Store(str(tmp_path / "py.db")).runs()) == 1
    with pytest.raises(ValueError, match="reading the run spec"):
        tabula.run(str(tmp_path / "missing.toml"), db=str(tmp_path / "py.db"))


def test_a_killed_run_resumes_to_the_clis_head(tabula_bin, tmp_path):
    """A Python process running a spec is killed once its first iteration is in the store;
    `tabula.run` of the same spec resumes it where it stopped and ends at the head of the
    CLI's whole run."""
    import os
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    spec = tmp_path / "killed.toml"
    spec.write_text(SPEC.replace('"tiny"', '"killed"').replace("iterations = 2", "iterations = 8"))
    db = tmp_path / "py.db"
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, tabula\n"
         "tabula.run(sys.argv[1], db=sys.argv[2], threads=1, quiet=True,\n"
         "           progress=lambda m: print(m['iteration'], flush=True))\n",
         str(spec), str(db)],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )

    def committed():
        # The callback comes when an iteration is handed to the store's writer thread, which
        # commits it a moment later: the store says what is committed.
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                return con.execute("SELECT iterations_done FROM runs").fetchone()[0]
            finally:
                con.close()
        except (sqlite3.Error, TypeError):
            return 0

    for line in child.stdout:
        if int(line) >= 1:
            break
    deadline = time.time() + 60
    while committed() < 1 and time.time() < deadline:
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL, "the child finished before it was killed"
    done = committed()
    assert 1 <= done < 8
    out = tabula.run(str(spec), db=str(db), threads=2, quiet=True)
    assert out["iterations"] == 8
    assert len(tabula.Store(str(db)).runs()) == 1
    run_cli(tabula_bin, "--db", str(tmp_path / "cli.db"), "run", str(spec), "--threads", "1")
    cli_head = tabula.Store(str(tmp_path / "cli.db")).sql("SELECT head FROM runs_hex")["head"][0]
    assert out["head"] == cli_head
