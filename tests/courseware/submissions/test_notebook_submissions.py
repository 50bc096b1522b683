"""Notebook uploads: JSON or multipart, refused with a message when not a notebook."""

from __future__ import annotations

import json

import nbformat
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from courseware.courses.models import Item, ItemKind
from courseware.submissions.models import Submission, SubmissionKind
from tests.conftest import Cast


@pytest.fixture
def notebook_item(cast: Cast) -> Item:
    return Item.objects.create(
        course=cast.item.course,
        kind=ItemKind.NOTEBOOK,
        slug="some-notebook",
        chapter="ch15",
        title_en="A notebook",
        source_path="ch15/some-notebook",
        content_hash="c" * 64,
        max_score=5,
        device_kinds=["cpu"],
        is_published=True,
    )


def a_notebook() -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    return nbformat.writes(nb)


def test_a_notebook_comes_in_as_json_text_or_object(cast: Cast, notebook_item: Item) -> None:
    client = cast.token_client(cast.alice)
    for notebook in (a_notebook(), json.loads(a_notebook())):
        response = client.post(
            "/api/v1/submissions",
            json.dumps({"exercise": "some-notebook", "notebook": notebook}),
            content_type="application/json",
        )
        assert response.status_code == 201, response.json()
    saved = Submission.objects.filter(item=notebook_item)
    assert saved.count() == 2 and {s.kind for s in saved} == {SubmissionKind.NOTEBOOK}
    assert nbformat.reads(saved[0].source, as_version=4).cells[0].source == "x = 1"


def test_a_notebook_comes_in_as_a_multipart_file(cast: Cast, notebook_item: Item) -> None:
    upload = SimpleUploadedFile("mine.ipynb", a_notebook().encode(), "application/x-ipynb+json")
    response = cast.token_client(cast.alice).post(
        "/api/v1/submissions", {"exercise": "some-notebook", "file": upload}
    )
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize(
    ("notebook", "fragment"),
    [
        ("this is not json", "not a valid Jupyter notebook"),
        ('{"cells": "nope"}', "not a valid Jupyter notebook"),
        ("", "upload your .ipynb"),
    ],
)
def test_anything_but_a_notebook_is_refused(
    cast: Cast, notebook_item: Item, notebook: str, fragment: str
) -> None:
    response = cast.token_client(cast.alice).post(
        "/api/v1/submissions",
        json.dumps({"exercise": "some-notebook", "notebook": notebook}),
        content_type="application/json",
    )
    assert response.status_code == 400 and fragment in response.json()["error"]
    assert Submission.objects.count() == 0


def test_a_binary_upload_or_a_missing_file_is_refused(cast: Cast, notebook_item: Item) -> None:
    client = cast.token_client(cast.alice)
    binary = SimpleUploadedFile("x.ipynb", b"\xff\xfe\x00garbage", "application/octet-stream")
    response = client.post("/api/v1/submissions", {"exercise": "some-notebook", "file": binary})
    assert response.status_code == 400 and "UTF-8" in response.json()["error"]
    response = client.post("/api/v1/submissions", {"exercise": "some-notebook"})
    assert response.status_code == 400 and "'file'" in response.json()["error"]


def test_a_notebook_over_the_limit_gets_413(cast: Cast, notebook_item: Item, settings) -> None:
    settings.SUBMISSIONS_MAX_BODY_BYTES = 2000
    big = SimpleUploadedFile("big.ipynb", b" " * 5000 + a_notebook().encode())
    response = cast.token_client(cast.alice).post(
        "/api/v1/submissions", {"exercise": "some-notebook", "file": big}
    )
    assert response.status_code == 413


def test_code_sent_to_a_notebook_exercise_is_refused(cast: Cast, notebook_item: Item) -> None:
    response = cast.token_client(cast.alice).post(
        "/api/v1/submissions",
        json.dumps({"exercise": "some-notebook", "code": "print(1)"}),
        content_type="application/json",
    )
    assert response.status_code == 400 and "notebook exercise" in response.json()["error"]
