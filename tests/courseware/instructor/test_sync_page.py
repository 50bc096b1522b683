"""Sync and validate the content from the site: a report per item; a broken file names its
problem and nothing already synced is lost."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse

from courseware.courses.models import Item
from tests.conftest import Cast
from tests.courseware.instructor.conftest import logged_in

pytestmark = pytest.mark.django_db

ORIGINAL = Path(settings.GRADERS_EXERCISES_ROOT)


def content_copy(root: Path, *slugs: str) -> Path:
    for slug in slugs:
        shutil.copytree(ORIGINAL / "ch15" / slug, root / "ch15" / slug)
    return root


def press(cast: Cast, action: str, root: Path) -> str:
    with override_settings(GRADERS_EXERCISES_ROOT=root):
        response = logged_in(cast.ines).post(reverse("instructor-content"), {"action": action})
    assert response.status_code == 200
    return response.content.decode()


def test_check_reports_each_item_and_writes_nothing(cast: Cast, tmp_path: Path) -> None:
    page = press(cast, "check", content_copy(tmp_path, "vector-add", "softmax"))
    assert "Every file is valid; nothing was written" in page
    assert 'data-slug="vector-add"' in page and "unchanged" in page
    # What the copy lacks would be unpublished by a sync, and the report says so first.
    assert 'data-slug="matmul"' in page and "no longer in the files: unpublished" in page
    assert Item.objects.get(slug="matmul").is_published


def test_sync_loads_the_files_and_says_what_changed(cast: Cast, tmp_path: Path) -> None:
    root = content_copy(tmp_path, "vector-add")
    prompt = root / "ch15" / "vector-add" / "prompt.en.md"
    prompt.write_text(prompt.read_text() + "\nOne more sentence.\n")
    before = Item.objects.get(slug="vector-add").content_hash
    page = press(cast, "sync", root)
    assert "Synced" in page and "changed" in page
    assert Item.objects.get(slug="vector-add").content_hash != before
    assert not Item.objects.get(slug="matmul").is_published


def test_a_broken_exercise_file_shows_its_message_and_loses_nothing_synced(
    cast: Cast, tmp_path: Path
) -> None:
    root = content_copy(tmp_path, "vector-add", "softmax")
    toml = root / "ch15" / "softmax" / "exercise.toml"
    toml.write_text(toml.read_text() + "\nno_such_key = 1\n")
    stored = dict(Item.objects.values_list("slug", "content_hash"))
    page = press(cast, "sync", root)
    assert "Not synced" in page and "Nothing was changed on the site" in page
    assert "no_such_key" in page and "exercise.toml" in page
    assert 'data-slug="softmax"' in page and "cannot be loaded" in page
    assert 'data-slug="vector-add"' not in page  # only the broken folder is listed
    assert dict(Item.objects.values_list("slug", "content_hash")) == stored
    assert Item.objects.get(slug="matmul").is_published


def test_a_missing_content_folder_is_reported_not_a_traceback(cast: Cast, tmp_path: Path) -> None:
    page = press(cast, "check", tmp_path / "nowhere")
    assert "Not synced" in page and "not found" in page


def test_an_unknown_action_says_what_to_press(cast: Cast) -> None:
    response = logged_in(cast.ines).post(reverse("instructor-content"), {"action": "x"})
    assert "Check the files” or “Sync into the site" in response.content.decode()


def test_the_report_names_each_kind_in_the_readers_language(cast: Cast, tmp_path: Path) -> None:
    with override_settings(GRADERS_EXERCISES_ROOT=content_copy(tmp_path, "vector-add")):
        response = logged_in(cast.ines).post(
            reverse("instructor-content"), {"action": "check"}, HTTP_ACCEPT_LANGUAGE="zh-hans"
        )
    page = response.content.decode()
    row = page[page.index('data-slug="vector-add"') :]
    row = row[: row.index("</tr>")]
    assert "编程练习" in row and ">exercise<" not in row  # the label, not the stored code
