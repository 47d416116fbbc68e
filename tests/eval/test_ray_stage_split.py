"""The stage split through Ray (docs/scale-out.md, "The stage split"): on a Ray instance with a GPU, `argus optimize`
gates each candidate as a CPU task (static, compile, verify) and a GPU task that reuses that verification. CI has no
GPU: the private instance declares one (``num_gpus=1``), so its "GPU" tasks run the rest of the gate on the CPU,
which is enough to check the protocol: the same trajectory as the serial local loop, and every GPU half's
verification reused, never run again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.private_ray import private_ray

pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_with_a_gpu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with private_ray(tmp_path_factory.mktemp("ray-split-cache"), num_gpus=1) as ray:  # the routing needs a GPU
        yield ray


def test_optimize_through_ray_splits_each_gate_and_follows_the_local_trajectory(
    ray_with_a_gpu: Any, tmp_path: Path
) -> None:
    from argus.agent.loop import Budget, optimize
    from argus.agent.providers.secrets import worker_environment
    from argus.agent.store import RunStore
    from argus.eval.ray_executor import RayExecutor

    def trajectory(result: Any) -> list[tuple[Any, ...]]:
        return [(row["step"], row["action"], row["status"], row["ms"]) for row in result.trajectory]

    class Recording(RayExecutor):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.jobs: list[tuple[str, str, dict[str, Any]]] = []

            self.values: dict[str, Any] = {}

        def submit(self, job: Any) -> None:
            self.jobs.append((job.key, str(job.resource), dict(job.kwargs.get("options") or {})))
            super().submit(job)

        def as_completed(self) -> Iterator[Any]:
            for result in super().as_completed():
                self.values[result.key] = result.value
                yield result

    local = optimize("gemm_naive", budget=Budget(candidates=2), store=tmp_path / "local.db", isolate=True)
    with Recording(job_env=worker_environment()) as executor:
        assert executor.cpu_workers() == 2 and executor.gpus() == 1
        split = optimize(
            "gemm_naive", budget=Budget(candidates=2), store=tmp_path / "ray.db", isolate=True, executor=executor
        )
    assert split.status == local.status == "finished"
    assert trajectory(split) == trajectory(local) and len(split.trajectory) == 3
    halves = [(k, r, o) for k, r, o in executor.jobs if "stop_after" in o or "prepared_verify" in o]
    cpu = {k.removesuffix("#prepare"): o for k, r, o in halves if k.endswith("#prepare")}
    gpu = {k: o for k, r, o in halves if not k.endswith("#prepare")}
    assert len(cpu) == 3 and set(gpu) <= set(cpu) and gpu
    assert all(o["stop_after"] == "verify" and o["device"] == "cpu" for o in cpu.values())
    assert all(r == "gpu" for k, r, o in halves if not k.endswith("#prepare"))
    assert all(r == "cpu" for k, r, o in halves if k.endswith("#prepare"))
    assert all(o["prepared_verify"]["details"]["fingerprint"] for o in gpu.values())
    for key in gpu:  # a GPU half's verify stage is the CPU half's, reused (the verifier did not run there)
        verify = [st for st in executor.values[key]["stages"] if st["stage"] == "verify"]
        assert verify and "reused" in verify[0]["details"], key
    with RunStore(tmp_path / "ray.db") as store:
        assert len(store.read_run(split.run_id).done) == 3
