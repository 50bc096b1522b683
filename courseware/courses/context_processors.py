from typing import Any

from django.http import HttpRequest

from courseware.courses.selectors import offering_ids_staffed_by


def course_roles(request: HttpRequest) -> dict[str, Any]:
    """Whether to show the staff links (review queue, gradebook) in the page header."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"is_course_staff": False}
    staffed = offering_ids_staffed_by(user=user)
    return {"is_course_staff": staffed is None or bool(staffed)}
