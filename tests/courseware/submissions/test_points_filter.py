"""Scores on the report and grading pages read as a person writes them: 2.5, not 2.500."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import translation

from courseware.submissions.templatetags.points import points_text
from tests.conftest import Cast
from tests.courseware.submissions.test_notebook_review import logged_in, waiting_notebook


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (Decimal("2.500"), "2.5"),
        (Decimal("3.333"), "3.333"),  # the stored precision: a breakdown still adds up
        (Decimal("10.000"), "10"),
        (Decimal("0.0004"), "0"),
        (2.0, "2"),
        (None, ""),
        ("n/a", "n/a"),
    ],
)
def test_points_drop_the_zeros_that_say_nothing(value: object, shown: str) -> None:
    with translation.override("en"):
        assert points_text(value) == shown  # type: ignore[arg-type]


def test_a_half_point_hand_grade_shows_as_two_and_a_half(cast: Cast) -> None:
    submission = waiting_notebook(cast.alice)
    ta = logged_in(cast.tara)
    ta.post(f"/submissions/{submission.pk}/hand-grades", {"score-explain": "2.5"})
    html = ta.get(f"/submissions/{submission.pk}/").content.decode()
    assert "2.5 / 3 by tara" in html and 'id="score">8.5<' in html
    assert "2.500" not in html and "1.0 / 1.0" not in html
