"""The secrets a system may name: files inside the secrets folder and allow-listed variables,
nothing else; the settings that declare them are checked at start-up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.mcp_gateway.config import load_mcp_gateway_settings
from services.mcp_gateway.systems.secrets import DeclaredSecrets, SecretMissing, UndeclaredSecret
from shared.contracts.system import AuthHeader, System
from shared.errors import SettingsError

APPS = Path(__file__).resolve().parents[4] / "apps" / "config.yml"


def system(**auth: str) -> System:
    return System(name="crm", base_url="http://crm.test", auth=AuthHeader(**auth))  # type: ignore[arg-type]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "crm_token").write_text("file-token-1234\n", encoding="utf-8")
    (tmp_path / "outside").write_text("not-for-systems", encoding="utf-8")
    return secrets


def test_a_declared_file_and_an_allow_listed_variable_are_read(folder: Path) -> None:
    declared = DeclaredSecrets(folder, frozenset({"CRM_TOKEN"}), {"CRM_TOKEN": "env-token-5678"})
    declared.check(system(value_file="crm_token"))
    declared.check(system(value_file=str(folder / "crm_token")))  # an absolute path inside the folder
    declared.check(system(value_env="CRM_TOKEN"))
    assert declared.read(AuthHeader(value_file="crm_token")) == "file-token-1234"
    assert declared.read(AuthHeader(value_env="CRM_TOKEN")) == "env-token-5678"
    with pytest.raises(SecretMissing, match="CRM_TOKEN is not set"):
        DeclaredSecrets(folder, frozenset({"CRM_TOKEN"})).read(AuthHeader(value_env="CRM_TOKEN"))


@pytest.mark.parametrize("name", ["../outside", "/etc/passwd", "sub/../../outside", ".", "link_out"])
def test_a_file_outside_the_folder_is_refused_naming_the_field(folder: Path, name: str) -> None:
    (folder / "link_out").symlink_to(folder.parent / "outside")  # a link that leads out
    declared = DeclaredSecrets(folder)
    with pytest.raises(UndeclaredSecret) as refused:
        declared.check(system(value_file=name))
    assert refused.value.field == "auth.value_file" and "system crm" in str(refused.value)
    assert "crm_token" in str(refused.value)  # what is declared: the folder's file names
    with pytest.raises(UndeclaredSecret):
        declared.read(AuthHeader(value_file=name))


def test_a_variable_not_on_the_list_and_any_file_without_a_folder_are_refused(folder: Path) -> None:
    declared = DeclaredSecrets(env_names=frozenset({"CRM_TOKEN"}), values={"OPENAI_API_KEY": "sk-user"})
    with pytest.raises(UndeclaredSecret, match=r"auth\.value_env: OPENAI_API_KEY is not a variable declared.*"
                                               r"CRM_TOKEN") as refused:
        declared.check(system(value_env="OPENAI_API_KEY"))
    assert refused.value.field == "auth.value_env"
    with pytest.raises(UndeclaredSecret, match="no secrets folder"):
        declared.check(system(value_file=str(folder / "crm_token")))
    with pytest.raises(UndeclaredSecret):  # read refuses before looking at the environment
        declared.read(AuthHeader(value_env="OPENAI_API_KEY"))
    DeclaredSecrets().check(System(name="open", base_url="http://open.test"))  # no auth: nothing to declare


def test_a_missing_file_in_the_folder_is_refused_at_apply_and_missing_at_call(folder: Path) -> None:
    declared = DeclaredSecrets(folder)
    with pytest.raises(UndeclaredSecret, match="is not a file in the secrets folder"):
        declared.check(system(value_file="not_there"))
    with pytest.raises(SecretMissing, match="not_there"):
        declared.read(AuthHeader(value_file="not_there"))


def test_the_settings_declare_them_and_refuse_what_cannot_be(folder: Path) -> None:
    settings = load_mcp_gateway_settings(APPS, {"AURORA_SECRETS_DIR": str(folder), "CRM_TOKEN": "crm-1",
                                                "OTHER": "not-declared",
                                                "AURORA_GATEWAY_SECRET_ENV": " CRM_TOKEN, PLANT_TOKEN ,"})
    assert settings.secrets == DeclaredSecrets(folder, frozenset({"CRM_TOKEN", "PLANT_TOKEN"}))
    assert settings.secrets.values == {"CRM_TOKEN": "crm-1"}  # read by the loader, the listed ones only
    assert settings.secrets.read(AuthHeader(value_env="CRM_TOKEN")) == "crm-1"
    assert "crm-1" not in repr(settings)
    assert load_mcp_gateway_settings(APPS, {}).secrets == DeclaredSecrets()
    for env, variable in (({"AURORA_SECRETS_DIR": str(folder / "crm_token")}, "AURORA_SECRETS_DIR"),
                          ({"AURORA_SECRETS_DIR": os.path.relpath(folder)}, "AURORA_SECRETS_DIR"),
                          ({"AURORA_GATEWAY_SECRET_ENV": "CRM TOKEN"}, "AURORA_GATEWAY_SECRET_ENV"),
                          ({"AURORA_GATEWAY_SECRET_ENV": "NATS_PASSWORD"}, "AURORA_GATEWAY_SECRET_ENV")):
        with pytest.raises(SettingsError) as bad:
            load_mcp_gateway_settings(APPS, env)
        assert bad.value.variable == variable
