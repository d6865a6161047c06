"""What the scripts that time tabula beside OpenSpiel share: pinning a command to a core, the
virtual environment with the pinned open_spiel (tests/openspiel/requirements.txt), and reading
the last JSON line a command prints."""
import json
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pinned(cmd, core):
    if core is not None and shutil.which("taskset"):
        return ["taskset", "-c", str(core)] + cmd
    return cmd


def ensure_venv(venv, python):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([python, "-m", "venv", venv], check=True)
        req = os.path.join(ROOT, "tests", "openspiel", "requirements.txt")
        subprocess.run([py, "-m", "pip", "install", "-q", "-r", req], check=True)
    return py


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])
