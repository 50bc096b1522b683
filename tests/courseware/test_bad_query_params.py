"""Every page and API route, opened by the people it is for with nonsense in its query string,
answers with a page or a refusal: never a server error."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from tests.courseware.test_permissions import (
    ARGUMENTS,
    EXPECTED,
    World,
    clients,
    filled,
    rule_for,
    site_routes,
    world,
)

__all__ = ["world"]  # the fixture, shared with the permission tests

# Every query parameter the site reads, with what a careless or hostile person might send.
NONSENSE = {
    name: value
    for name in (
        "against",
        "ai",
        "op",
        "device",
        "roof",
        "part",
        "q",
        "offering",
        "item",
        "scope",
        "seed",
        "attempt",
        "user",
        "student",
        "format",
        "needs_person",
        "error",
        "flags",
        "late",
        "starter",
        "next",
        "page",
        "batch",
        "language",
    )
    for value in ["-1e309 <script>\x00%ff"]
}


def test_nonsense_in_the_query_string_never_makes_a_server_error(world: World) -> None:
    page_people, api_people = clients(world, api=False), clients(world, api=True)
    errors, tried = [], 0
    for route in site_routes():
        rule = rule_for(route)
        if rule is None or rule.method != "GET" or route.pattern.startswith("admin/"):
            continue
        kwargs = {a: world.value(rule.kwargs.get(a, ARGUMENTS[a])) for a in route.arguments}
        url = reverse(route.key, kwargs=kwargs) if route.named else filled(route.pattern, kwargs)
        people = api_people if route.pattern.startswith("^api/") else page_people
        for person in EXPECTED[rule.access]["allowed"]:
            response = people[person].get(f"{url}?{urlencode(NONSENSE)}")
            tried += 1
            if response.status_code >= 500:
                errors.append(f"{url} as {person}: {response.status_code}")
    assert tried > 40, tried  # the routes were found and opened, not skipped
    assert not errors, "\n".join(errors)
