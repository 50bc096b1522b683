"""Management commands that instructors and `make run` use."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from courseware.accounts.models import ApiToken
from courseware.courses.models import Item


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_sync_content_loads_the_exercises_and_prints_one_summary_line() -> None:
    line = run("sync_content").strip()
    assert line.startswith("Synced: ") and "exercises" in line and "quiz questions" in line
    assert "\n" not in line
    item = Item.objects.get(slug="vector-add")
    assert item.is_published and item.chapter == "ch15" and len(item.content_hash) == 64
    assert run("sync_content")  # a second run reuses what exists
    assert Item.objects.filter(slug="vector-add").count() == 1


@pytest.mark.django_db
def test_sync_content_check_writes_nothing() -> None:
    assert run("sync_content", "--check").startswith("Checked: ")
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_sync_content_refuses_a_broken_exercise_and_names_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "ch15" / "vector-add"
    shutil.copytree(settings.GRADERS_EXERCISES_ROOT / "ch15" / "vector-add", broken)
    toml = broken / "exercise.toml"
    toml.write_text(toml.read_text() + "\nno_such_key = 1\n")
    with pytest.raises(CommandError) as caught:
        call_command("sync_content", "--root", str(tmp_path))
    assert "exercise.toml" in str(caught.value) and "no_such_key" in str(caught.value)
    assert Item.objects.count() == 0


@pytest.mark.django_db
def test_issue_token_prints_the_same_token_each_time() -> None:
    run("seed_demo")
    first = run("issue_token", "student").strip()
    assert first == run("issue_token", "student").strip()
    assert ApiToken.objects.get(key=first).user.username == "student"
    with pytest.raises(CommandError, match="No user named"):
        call_command("issue_token", "nobody")


@pytest.mark.django_db
def test_seed_demo_can_run_twice() -> None:
    first = run("seed_demo")
    assert "student" in first and "ta" in first and "instructor" in first
    assert run("seed_demo") == first


@pytest.mark.django_db
def test_drafts_and_exercises_that_failed_validation_are_not_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for slug in ("vector-add", "softmax"):
        shutil.copytree(settings.GRADERS_EXERCISES_ROOT / "ch15" / slug, tmp_path / "ch15" / slug)
    (tmp_path / "ch15" / "softmax" / "validate.toml").write_text("draft = true\n")
    line = run("sync_content", "--root", str(tmp_path))
    assert "not published: softmax (draft)" in line
    assert not Item.objects.get(slug="softmax").is_published
    assert Item.objects.get(slug="vector-add").is_published

    monkeypatch.setattr(
        "courseware.authoring.services.validation_status",
        lambda spec: "failed" if spec.slug == "vector-add" else "unknown",
    )
    line = run("sync_content", "--root", str(tmp_path))
    assert "vector-add (failed validation" in line
    assert not Item.objects.get(slug="vector-add").is_published


@pytest.mark.django_db
def test_a_second_sync_of_unchanged_content_keeps_every_digest() -> None:
    # The digest stored per item is its version: syncing the same files must not make one.
    run("sync_content")
    first = dict(Item.objects.values_list("slug", "content_hash"))
    assert {"vector-add", "fusion-notebook"} <= set(first)
    assert any(kind == "quiz" for kind in Item.objects.values_list("kind", flat=True))
    run("sync_content")
    assert dict(Item.objects.values_list("slug", "content_hash")) == first


@pytest.mark.django_db
def test_a_slug_used_twice_is_refused_naming_both_files(tmp_path: Path) -> None:
    for chapter in ("ch15", "ch16"):
        shutil.copytree(
            settings.GRADERS_EXERCISES_ROOT / "ch15" / "softmax", tmp_path / chapter / "softmax"
        )
    with pytest.raises(CommandError) as caught:
        call_command("sync_content", "--root", str(tmp_path))
    message = str(caught.value)
    assert f"{tmp_path / 'ch16' / 'softmax' / 'exercise.toml'}: field 'slug': 'softmax'" in message
    assert str(tmp_path / "ch15" / "softmax" / "exercise.toml") in message
    assert Item.objects.count() == 0
