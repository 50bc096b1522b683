"""The tool's RSA key pairs: made by `manage.py lti_generate_key`, published as a JWKS."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pylti1p3.registration import Registration

from courseware.lti.models import ToolKey

KEY_BITS = 2048


class NoToolKey(Exception):
    """The tool has no key yet: run `python manage.py lti_generate_key`."""


def public_jwk(public_key_pem: str) -> dict[str, Any]:
    """The key as a JWK, with the kid pylti1p3 puts in the header of what it signs (the RFC
    7638 thumbprint), so a platform finds the key a JWT names."""
    return dict(Registration.get_jwk(public_key_pem))


def tool_key_generate() -> ToolKey:
    """A new key pair; it signs from now on, and older active keys stay in the JWKS."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return ToolKey.objects.create(
        kid=public_jwk(public_pem)["kid"], public_key_pem=public_pem, private_key_pem=private_pem
    )


def signing_key() -> ToolKey:
    key = ToolKey.objects.filter(is_active=True).first()  # newest first
    if key is None:
        raise NoToolKey("The tool has no key yet: run `python manage.py lti_generate_key`.")
    return key


def tool_jwks() -> dict[str, list[dict[str, Any]]]:
    return {"keys": [public_jwk(k.public_key_pem) for k in ToolKey.objects.filter(is_active=True)]}
