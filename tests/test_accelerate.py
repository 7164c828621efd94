"""Every TRL / HF-Trainer trainer of the library under `accelerate launch` with two CPU processes
(`benchmarks/accelerate_check.py`): each rank trains on its own share of the data, and all ranks end with the same
parameters, which moved. Antibody's trainers take their gradients with `torch.autograd.grad` and average them over the
processes themselves; without that the ranks drift apart (params_equal False), which this test would catch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAINERS = {"abstention-sft", "abstention-grpo", "vta-sft", "vta-grpo", "mlr-grpo", "remix", "antibody-stage1",
            "antibody-booster", "antibody-lisa", "antibody-stage2"}  # fmt: skip


@pytest.mark.skipif(shutil.which("accelerate") is None and not Path(sys.executable).with_name("accelerate").exists(),
                    reason="accelerate's launcher is not installed")  # fmt: skip
def test_every_trainer_under_accelerate_launch_with_two_processes(tmp_path):
    launcher = Path(sys.executable).with_name("accelerate")
    cmd = [str(launcher) if launcher.exists() else "accelerate", "launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           str(ROOT / "benchmarks" / "accelerate_check.py"), "--out", str(tmp_path / "check.json")]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "check.json").read_text())
    assert set(report) == TRAINERS
    for name, r in report.items():
        assert r["processes"] == 2, name
        assert r["params_equal"] and r["params_changed"], (name, r)
        rows = r["rows_per_rank"]
        assert min(rows) > 0 and r["shared_rows"] <= min(rows) // 4, (name, r)  # each rank its own data
