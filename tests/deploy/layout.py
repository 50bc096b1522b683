"""Where the deployment files are, and running a deploy script the way a unit or image would."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
SCRIPTS = sorted(DEPLOY.glob("*.sh"))
# The variables deploy/worker.sh reads: a test's run starts without any of the developer's.
WORKER_VARIABLES = (
    "WORKER",
    "WORKER_KIND",
    "SLOT",
    "GPU",
    "POOL",
    "GRADING_DEVICE_KIND",
    "GRADERS_SLOT",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "DRY_RUN",
)


def script_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in WORKER_VARIABLES}
    env.update(overrides)
    return env


def run_script(
    name: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DEPLOY / name), *args],
        env=env if env is not None else script_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def k8s_documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object under deploy/k8s (the kustomization is kustomize's, not one)."""
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                yield path, document


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded
