"""The demo systems' pure logic: the industrial system's devices, drafts and idempotent rules,
and the asset register's links (two assets for one device, none for another)."""

from __future__ import annotations

import pytest

from apps.aurora_app_assets import register
from apps.aurora_app_industrial import plant
from apps.aurora_app_industrial.plant import PlantError, Rules


@pytest.mark.parametrize(("text", "device"), [
    ("设备 C-3 最近的告警和资产档案", "C-3"), ("给设备 P-101 添加规则 温度超过 90 告警", "P-101"),
    ("what about Pump P-101", "P-101"), ("fan f-9 alarms?", "F-9"),
])
def test_the_device_a_text_names(text: str, device: str) -> None:
    assert plant.find_device(text)["device_id"] == device


def test_a_text_naming_no_device_says_which_exist() -> None:
    with pytest.raises(PlantError, match="known: P-101, C-3, F-9"):
        plant.find_device("设备 C-33 的告警")  # C-3 is not a prefix match


@pytest.mark.parametrize(("description", "point", "operator", "threshold"), [
    ("温度超过 90 告警", "TT-204", ">", 90.0), ("pressure below 2.5 bar", "PT-110", "<", 2.5),
    ("TT-204 高于 88", "TT-204", ">", 88.0),
])
def test_a_draft_takes_point_comparison_and_threshold_from_the_description(
        description: str, point: str, operator: str, threshold: float) -> None:
    draft = plant.draft_rule("P-101", description)
    assert (draft["point_id"], draft["operator"], draft["threshold"]) == (point, operator, threshold)
    assert draft["idempotency_key"] == f"rule:P-101:{point}:{operator}:{threshold:g}"


@pytest.mark.parametrize(("description", "problem"), [
    ("振动超过 5", "names none of P-101's points"), ("温度 90", "no comparison"), ("温度超过很多", "no threshold"),
])
def test_a_description_the_system_cannot_draft_says_what_is_missing(description: str, problem: str) -> None:
    with pytest.raises(PlantError, match=problem):
        plant.draft_rule("P-101", description)


def test_saving_the_same_key_twice_answers_the_first_rule() -> None:
    rules = Rules()
    fields = {"device_id": "P-101", "point_id": "TT-204", "operator": ">", "threshold": 90.0, "name": "r",
              "idempotency_key": "k1"}
    first, again = rules.save(**fields), rules.save(**{**fields, "threshold": 99.0})  # type: ignore[arg-type]
    assert first["created"] is True and again == {**first, "created": False}
    assert len(rules.of_device("P-101")) == 1 and rules.get(idempotency_key="k1")["rule"]["threshold"] == 90.0
    assert rules.enable(first["rule_id"])["enabled"] is True
    with pytest.raises(PlantError, match="idempotency_key is empty"):
        rules.save(**{**fields, "idempotency_key": " "})  # type: ignore[arg-type]
    with pytest.raises(PlantError, match="no point"):
        rules.save(**{**fields, "idempotency_key": "k2", "point_id": "VT-311"})  # type: ignore[arg-type]


def test_the_asset_register_links_two_assets_to_one_device_and_none_to_another() -> None:
    assert len(register.ASSETS) == 8
    assert [a["assetCode"] for a in register.search("Pump P-101")["items"]] == ["AS-0001", "AS-0002"]
    assert register.search("compressor c-3")["count"] == 1
    assert register.search("Fan F-9") == {"deviceName": "Fan F-9", "items": [], "count": 0}
    profile = register.profile("AS-0003")
    assert profile is not None and profile["deviceName"] == "Compressor C-3"
    assert register.profile("AS-9999") is None
    # every device of the industrial system that has assets is linked by its exact name
    names = {d["name"] for d in plant.DEVICES.values()}
    assert {a["deviceName"] for a in register.ASSETS} & names == {"Pump P-101", "Compressor C-3"}
