"""An exercise says which worker kinds may grade it (`worker_kinds` in exercise.toml), and its
grading goes to the queue of such a kind; the engine is called with that kind's device."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings as django_settings
from pytest_django.fixtures import Settings

from courseware.refusals import Refused
from courseware.submissions.selectors import worker_kinds_for
from courseware.submissions.tasks import grade_submission
from graders import SpecError, iter_exercises, load_exercise
from graders.spec.exercise import worker_kind_allowed, worker_kind_device
from tests.conftest import Cast
from tests.courseware.fleet.helpers import REPORT, registered, submit

VECTOR_ADD = Path(django_settings.GRADERS_EXERCISES_ROOT) / "ch15" / "vector-add"


def with_worker_kinds(root: Path, line: str) -> Path:
    """A copy of vector-add under `root`/ch15 whose exercise.toml has `line` after devices."""
    folder = root / "ch15" / "vector-add"
    shutil.copytree(VECTOR_ADD, folder)
    toml = folder / "exercise.toml"
    text = toml.read_text()
    devices = next(line for line in text.splitlines() if line.startswith("devices"))
    toml.write_text(text.replace(devices, f"{devices}\n{line}", 1))
    return folder


def test_every_exercise_without_the_field_takes_its_devices() -> None:
    for spec in iter_exercises(Path(django_settings.GRADERS_EXERCISES_ROOT)):
        assert spec.worker_kinds == spec.devices
        assert "cpu" in spec.worker_kinds  # every exercise here is CPU-gradable


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('worker_kinds = ["H100"]', "is not a worker kind"),
        ('worker_kinds = ["cuda-h100", "cuda-h100"]', "without repeats"),
        ("worker_kinds = []", "non-empty"),
        ('worker_kinds = ["cpu"]\ndevices_note = 1', "devices_note"),
    ],
)
def test_a_bad_worker_kinds_line_says_what_is_wrong(
    tmp_path: Path, line: str, problem: str
) -> None:
    with pytest.raises(SpecError, match=problem):
        load_exercise(with_worker_kinds(tmp_path, line))


def test_a_kind_must_grade_on_a_listed_device(tmp_path: Path) -> None:
    folder = with_worker_kinds(tmp_path, 'worker_kinds = ["cuda-a100"]')
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace('devices = ["cpu", "cuda"]', 'devices = ["cpu"]'))
    with pytest.raises(SpecError, match="'devices' does not list"):
        load_exercise(folder)


def test_kinds_and_devices() -> None:
    assert worker_kind_device("cpu") == "cpu" and worker_kind_device("cuda-h100") == "cuda"
    assert worker_kind_allowed("cuda-h100", ("cpu", "cuda"))  # "cuda": any CUDA worker
    assert not worker_kind_allowed("cuda-h100", ("cpu", "cuda-a100"))
    with pytest.raises(ValueError, match="cuda-<model>"):
        worker_kind_device("H100")


def test_an_exercise_for_gpus_only_goes_to_the_least_loaded_live_gpu_kind(
    cast: Cast,
    settings: Settings,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Callable[..., AbstractContextManager[object]],
) -> None:
    settings.GRADERS_EXERCISES_ROOT = tmp_path
    settings.GRADING_SECONDS_PER_DAY = 0
    with_worker_kinds(tmp_path, 'worker_kinds = ["cuda-h100", "cuda-a100"]')
    assert worker_kinds_for(cast.item) == ("cuda-h100", "cuda-a100")
    with pytest.raises(Refused, match="cannot be graded on 'cpu'"):
        submit(cast.alice, device_kind="cpu")

    # No worker up yet: the first kind listed.
    assert submit(cast.alice).device_kind == "cuda-h100"
    registered("cuda-h100-0@gpu-1", kind="cuda-h100")
    registered("cuda-a100-0@gpu-2", kind="cuda-a100")
    # cuda-h100 has one queued per worker, cuda-a100 none: the next goes to the A100s.
    with (
        mock.patch("courseware.submissions.services.current_app.send_task") as send,
        django_capture_on_commit_callbacks(execute=True),
    ):
        made = submit(cast.bob)
    assert made.device_kind == "cuda-a100"
    send.assert_called_once_with("graders.grade_submission", args=[made.pk], queue="cuda-a100")

    with mock.patch("graders.grade", return_value=REPORT) as engine:
        grade_submission.apply(args=(made.pk,))
    assert engine.call_args.kwargs["device"] == "cuda"  # the engine's device for cuda-a100
