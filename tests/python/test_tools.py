"""tools/bench_vs_torch.py's PyTorch workers: a worker that crashes or hangs is reported and
restarted, so that a suite or sweep (tools/sweep_vs_torch.py) runs to its end. Fake interpreters
stand in for PyTorch: each answers the version line, then every request its own way."""

import pathlib
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import bench_vs_torch as bvt  # noqa: E402

# What the fake does with a request: answer it, exit (a crash), or wait forever (a hang).
ACTIONS = {
    "answer": 'echo \'{"fwd": 0.5, "bwd": "not implemented"}\'',
    "crash": "exit 3",
    "hang": "sleep 1000",
}
SPEC = "warp_2d_n1c1_i8x8_o8x8_bilinear_zeros_ac0_f32_cf"


def fake_python(tmp_path, action, version=True):
    path = tmp_path / f"python-{action}"
    path.write_text("#!/bin/sh\n" +
                    ("echo '{\"version\": \"fake\"}'\n" if version else "sleep 1000\n") +
                    "while read -r line; do\n"
                    f"  {ACTIONS[action]}\n"
                    "done\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_worker_reports_and_restarts(tmp_path, action):
    w = bvt.Worker(fake_python(tmp_path, action), 1, hang_seconds=1)
    first = w.proc
    t0 = time.monotonic()
    got = w.time(SPEC)
    assert time.monotonic() - t0 < 30
    if action == "answer":
        assert got == {"fwd": 0.5, "bwd": "not implemented"}
        assert w.proc is first
    else:
        why = "PyTorch crashed (exit status 3)" if action == "crash" else \
            "PyTorch hung (no reply in 1 s, killed)"
        assert got == {"fwd": why, "bwd": why}
        assert first.poll() is not None  # the old worker is gone ...
        assert w.proc is not first and w.proc.poll() is None  # ... and a new one serves
        assert w.version == "fake"
        assert w.time(SPEC) == got  # (and fails the same way again)
    w.close()  # (a fresh fake waits for a request: closing its stdin ends it)


def test_worker_that_never_starts(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="no PyTorch worker started in 3 tries"):
        bvt.Worker(fake_python(tmp_path, "answer", version=False), 1, hang_seconds=1)
    assert 3 <= time.monotonic() - t0 < 30  # (three starts, each given its second)
