"""Registering an LMS on the site's page (with the tool's addresses printed for the LMS's
administrator), the tool's key made by a command, and its JWKS, which never shows the private
key."""

from __future__ import annotations

import io

from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from courseware.lti.models import Deployment, Platform, ToolKey
from tests.conftest import Cast

REGISTRATION = {
    "action": "register",
    "name": "Canvas at Uni",
    "issuer": "https://canvas.instructure.com",
    "client_id": "10000000000042",
    "auth_login_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
    "auth_token_url": "https://sso.canvaslms.com/login/oauth2/token",
    "key_set_url": "https://sso.canvaslms.com/api/lti/security/jwks",
    "auth_audience": "",
    "frame_origins": "https://uni.instructure.com",
    "deployment_ids": "1:abc\n2:def\n",
}


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_instructor_registers_an_lms_with_the_addresses_it_needs(cast: Cast) -> None:
    ines = logged_in(cast.ines)
    assert 'id="no-key"' in ines.get("/lti/platforms/").content.decode()
    out = io.StringIO()
    call_command("lti_generate_key", stdout=out)
    assert "PRIVATE" not in out.getvalue() and "BEGIN PUBLIC KEY" in out.getvalue()

    page = ines.get("/lti/platforms/").content.decode()
    for shown in (
        '<code id="url-login">http://testserver/lti/login/</code>',
        '<code id="url-launch">http://testserver/lti/launch/</code>',
        '<code id="url-jwks">http://testserver/lti/jwks/</code>',
        "BEGIN PUBLIC KEY",
        ToolKey.objects.get().kid,
    ):
        assert shown in page
    assert "PRIVATE" not in page

    response = ines.post("/lti/platforms/", REGISTRATION)
    assert response.status_code == 302
    platform = Platform.objects.get()
    assert (platform.issuer, platform.client_id, platform.registered_by) == (
        "https://canvas.instructure.com",
        "10000000000042",
        cast.ines,
    )
    assert sorted(Deployment.objects.values_list("deployment_id", flat=True)) == ["1:abc", "2:def"]

    again = ines.post("/lti/platforms/", REGISTRATION)
    assert again.status_code == 400 and "registered already" in again.content.decode()
    added = ines.post(
        "/lti/platforms/", {"action": "deployment", "platform": platform.pk, "deployment_id": "3:x"}
    )
    assert added.status_code == 302 and platform.deployments.count() == 3


def test_a_ta_may_not_register_an_lms(cast: Cast) -> None:
    response = logged_in(cast.tara).post("/lti/platforms/", REGISTRATION)
    assert response.status_code == 403 and not Platform.objects.exists()


def test_the_jwks_publishes_every_active_public_key_and_no_private_part(db: None) -> None:
    call_command("lti_generate_key", stdout=io.StringIO())
    call_command("lti_generate_key", stdout=io.StringIO())
    keys = Client().get("/lti/jwks/").json()["keys"]
    assert {k["kid"] for k in keys} == set(ToolKey.objects.values_list("kid", flat=True))
    assert all(k["kty"] == "RSA" and k["alg"] == "RS256" and "d" not in k for k in keys)

    call_command("lti_generate_key", "--retire-older", stdout=io.StringIO())
    newest = ToolKey.objects.first()
    assert newest is not None
    assert [k["kid"] for k in Client().get("/lti/jwks/").json()["keys"]] == [newest.kid]
