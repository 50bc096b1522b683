"""pylti1p3's view of the registrations: read from the database (Platform, Deployment,
ToolKey) instead of its JSON file or its own Django models."""

from __future__ import annotations

from typing import Any

from pylti1p3.deployment import Deployment as LtiDeployment
from pylti1p3.registration import Registration
from pylti1p3.tool_config import ToolConfAbstract

from courseware.lti.keys import signing_key
from courseware.lti.models import Deployment, Platform


def platform_find(*, issuer: str, client_id: str | None) -> Platform | None:
    """The registration for this issuer and client id. A login request may leave the client id
    out (LTI makes it optional): then only an issuer with one registration is found."""
    platforms = Platform.objects.filter(issuer=issuer)
    if client_id:
        return platforms.filter(client_id=client_id).first()
    found = list(platforms[:2])
    return found[0] if len(found) == 1 else None


def registration_for(platform: Platform) -> Registration:
    key = signing_key()
    registration = (
        Registration()
        .set_issuer(platform.issuer)
        .set_client_id(platform.client_id)
        .set_auth_login_url(platform.auth_login_url)
        .set_auth_token_url(platform.auth_token_url)
        .set_key_set_url(platform.key_set_url)
        .set_tool_private_key(key.private_key_pem)
        .set_tool_public_key(key.public_key_pem)
    )
    if platform.auth_audience:
        registration.set_auth_audience(platform.auth_audience)
    return registration


class DatabaseToolConf(ToolConfAbstract[Any]):
    """Every issuer may have many client ids (one per registration of the tool)."""

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args: Any, **kwargs: Any) -> Registration:
        raise NotImplementedError("registrations are found by issuer and client id")

    def find_registration_by_params(
        self, iss: str, client_id: str, *args: Any, **kwargs: Any
    ) -> Registration:
        platform = platform_find(issuer=iss, client_id=client_id)
        # pylti1p3 refuses the launch when this is None ("Registration not found").
        return registration_for(platform) if platform is not None else None  # type: ignore[return-value]

    def find_deployment(self, iss: str, deployment_id: str) -> LtiDeployment | None:
        raise NotImplementedError("deployments are found by issuer, client id and id")

    def find_deployment_by_params(
        self, iss: str, deployment_id: str, client_id: str, *args: Any, **kwargs: Any
    ) -> LtiDeployment | None:
        exists = Deployment.objects.filter(
            platform__issuer=iss, platform__client_id=client_id, deployment_id=deployment_id
        ).exists()
        return LtiDeployment().set_deployment_id(deployment_id) if exists else None
