from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "courseware.accounts"
    label = "accounts"
