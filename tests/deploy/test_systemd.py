"""The systemd units: parsed here, and verified by systemd itself where systemd-analyze exists.

`systemd-analyze verify` loads each unit as systemd would, warns about unknown keys and refuses
an ExecStart that is not an executable file; the units name /opt/courseware, so the check runs
on copies that point at this checkout instead.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from .layout import DEPLOY, ROOT, run_script, script_env

UNITS = DEPLOY / "systemd"
INSTALL_DIR = "/opt/courseware"
# A template is verified through an instance of it, named as the docs name them.
INSTANCES = {"courseware-worker@.service": "courseware-worker@cuda-h100-0.service"}


def parse(path: Path) -> dict[str, dict[str, list[str]]]:
    """Sections of key -> values (systemd keys may repeat, e.g. Environment=)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{path.name}: {line!r} before any section"
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def units() -> list[Path]:
    return sorted(p for p in UNITS.iterdir() if p.suffix in (".service", ".target"))


def services() -> list[Path]:
    return [p for p in units() if p.suffix == ".service"]


@pytest.mark.parametrize("unit", services(), ids=lambda p: p.name)
def test_each_service_runs_an_existing_deploy_script_with_the_site_settings(unit: Path):
    sections = parse(unit)
    assert sections["Unit"]["Description"]
    service = sections["Service"]
    (exec_start,) = service["ExecStart"]
    script = Path(exec_start.split()[0])
    assert script.parent == Path(INSTALL_DIR, "deploy")
    local = ROOT / script.relative_to(INSTALL_DIR)
    assert local.is_file() and local.stat().st_mode & 0o111, f"{local} missing or not executable"
    assert service["WorkingDirectory"] == [INSTALL_DIR]
    assert service["EnvironmentFile"] == ["/etc/courseware.env"]
    assert service["Restart"] == ["on-failure"]
    (wanted_by,) = sections["Install"]["WantedBy"]
    assert wanted_by == "multi-user.target" or (UNITS / wanted_by).is_file()


def test_the_worker_template_names_its_device_and_drains_before_it_stops():
    service = parse(UNITS / "courseware-worker@.service")["Service"]
    assert "WORKER=%i" in service["Environment"]
    assert service["KillMode"] == ["mixed"]  # SIGTERM to celery's main process only
    assert int(service["TimeoutStopSec"][0]) > settings.CELERY_TASK_TIME_LIMIT
    assert service["RestartPreventExitStatus"] == ["2"]
    assert "User" not in service  # root: each sandbox drops to the slot's own uid


def test_an_instance_name_starts_the_worker_the_docs_promise():
    """courseware-worker@cuda-h100-2 passes WORKER=cuda-h100-2: GPU 2, slot 2, queue cuda-h100."""
    result = run_script("worker.sh", env=script_env(DRY_RUN="1", WORKER="cuda-h100-2"))
    assert "GRADERS_SLOT=2 CUDA_VISIBLE_DEVICES=2" in result.stdout
    assert "-Q cuda-h100" in result.stdout and "--hostname cuda-h100-2@%h" in result.stdout
    bad = run_script("worker.sh", env=script_env(DRY_RUN="1", WORKER="cuda-h100"))
    assert bad.returncode == 2  # = RestartPreventExitStatus: systemd does not loop on it


def local_copies(tmp_path: Path, source: Path = UNITS) -> list[str]:
    """The units pointed at this checkout; returns the names to verify."""
    names = []
    for unit in sorted(source.iterdir()):
        if unit.suffix not in (".service", ".target"):
            continue
        (tmp_path / unit.name).write_text(unit.read_text().replace(INSTALL_DIR, str(ROOT)))
        names.append(str(tmp_path / INSTANCES.get(unit.name, unit.name)))
    return names


def verify(names: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *names],
        capture_output=True,
        text=True,
        timeout=60,
    )


needs_systemd = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here"
)


@needs_systemd
def test_systemd_accepts_every_unit(tmp_path: Path):
    result = verify(local_copies(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr  # warnings too: an unknown key, a typo


@needs_systemd
def test_systemd_refuses_a_broken_unit(tmp_path: Path):
    broken = tmp_path / "src"
    broken.mkdir()
    text = (UNITS / "courseware-worker@.service").read_text()
    (broken / "courseware-worker@.service").write_text(
        text.replace("deploy/worker.sh", "deploy/no-such-worker.sh")
    )
    result = verify(local_copies(tmp_path, broken))
    assert result.returncode != 0
    assert "no-such-worker.sh" in result.stderr
    (broken / "courseware-worker@.service").write_text(text.replace("KillMode", "KilMode"))
    assert "KilMode" in verify(local_copies(tmp_path, broken)).stderr
