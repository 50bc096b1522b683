"""The LTI pages' forms: registering an LMS, and adding a deployment ID to it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import models
from django.utils.translation import gettext_lazy as _

from courseware.lti.frames import origin_of
from courseware.lti.models import Deployment, Platform


def https_urls(field: models.Field[Any, Any], **kwargs: Any) -> forms.Field | None:
    # LMS addresses are HTTPS; a URL typed without a scheme is taken as one.
    if isinstance(field, models.URLField):
        return field.formfield(assume_scheme="https", **kwargs)
    return field.formfield(**kwargs)


class PlatformForm(forms.ModelForm):
    deployment_ids = forms.CharField(
        label=_("Deployment IDs"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("One per line, as the LMS shows them after the tool is installed."),
    )

    class Meta:
        model = Platform
        fields = [
            "name",
            "issuer",
            "client_id",
            "auth_login_url",
            "auth_token_url",
            "key_set_url",
            "auth_audience",
            "frame_origins",
        ]
        widgets = {
            **{
                name: forms.TextInput(attrs={"size": 60})
                for name in ("name", "issuer", "client_id", "auth_audience")
            },
            **{
                name: forms.URLInput(attrs={"size": 60})
                for name in ("auth_login_url", "auth_token_url", "key_set_url")
            },
            "frame_origins": forms.Textarea(attrs={"rows": 2}),
        }
        formfield_callback = https_urls

    def clean_frame_origins(self) -> str:
        lines = str(self.cleaned_data.get("frame_origins") or "").split()
        bad = [line for line in lines if origin_of(line) is None]
        if bad:
            raise forms.ValidationError(
                _("Write each address as https://host (not %(bad)s).") % {"bad": bad[0][:80]}
            )
        return "\n".join(origin_of(line) or "" for line in lines)

    def deployment_list(self) -> list[str]:
        return deployment_lines(self.cleaned_data.get("deployment_ids") or "")


def deployment_lines(text: str) -> list[str]:
    return sorted({line.strip()[:255] for line in text.splitlines() if line.strip()})


class DeploymentForm(forms.Form):
    platform = forms.ModelChoiceField(queryset=Platform.objects.all(), widget=forms.HiddenInput)
    deployment_id = forms.CharField(label=_("Deployment ID"), max_length=255)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        platform, deployment = data.get("platform"), data.get("deployment_id")
        taken = Deployment.objects.filter(platform=platform, deployment_id=deployment)
        if platform and deployment and taken.exists():
            raise forms.ValidationError(_("This deployment ID is registered already."))
        return data
