"""`find_tools`: the terms of a text, the ranking of a search, and which schemas a turn offers."""

from __future__ import annotations

from typing import Any

import pytest

from services.runner.tools import find_tools
from services.runner.tools.find_tools import BadSearch, ToolOffer, answer, found_in, index, search, terms


def tool(name: str, description: str, **parameters: str) -> dict[str, Any]:
    properties = {key: {"type": "string", "description": text} for key, text in parameters.items()}
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": properties}}}


CATALOG = [
    tool("erp__track_shipment", "Delivery status and arrival estimate of a parcel.", tracking_number="The number"),
    tool("erp__list_orders", "Orders of a customer, with their status."),
    tool("erp__create_invoice", "Create an invoice for a customer.", customer="Who pays", amount="How much"),
    tool("erp__invoice_pdf", "The PDF of an invoice.", invoice_id="Invoice number"),
    tool("crm__customer_status", "The status of a customer account."),
    tool("weather__forecast", "查询城市天气预报", city="城市名称"),
    tool("hr__leave_balance", "Days of leave an employee has left.", employee="Employee id, e.g. the shipment "
         "clerk"),
]


def names(hits: list[tuple[find_tools.Indexed, float]]) -> list[str]:
    return [t.function for t, _ in hits]


def test_terms_split_code_names_and_chinese() -> None:
    assert terms("im.polaris.weather__getWeather") == ["im", "polaris", "weather", "get", "weather"]
    assert terms("查询天气 forecast") == ["查询", "询天", "天气", "forecast"]
    assert terms("X") == ["x"] and terms("") == []


def test_a_name_match_ranks_above_a_parameter_description_match() -> None:
    found = names(search([index(t) for t in CATALOG], "shipment"))
    assert found == ["erp__track_shipment", "hr__leave_balance"]


def test_rare_terms_outweigh_common_ones_and_prefixes_match() -> None:
    indexed = [index(t) for t in CATALOG]
    assert names(search(indexed, "invoices")) == ["erp__create_invoice", "erp__invoice_pdf"]
    assert names(search(indexed, "an invoice for the customer", limit=1)) == ["erp__create_invoice"]
    # "status" is in three tools, "orders" in one: the order tool wins.
    assert names(search(indexed, "status of orders"))[0] == "erp__list_orders"


def test_chinese_queries_match_by_bigram() -> None:
    assert names(search([index(t) for t in CATALOG], "明天北京天气怎么样")) == ["weather__forecast"]


def test_the_tool_name_behind_a_lossy_function_name_is_searched_too() -> None:
    lossy = tool("shop__abc123", "Lookup.")
    assert names(search([index(lossy, "shop.查询库存")], "库存")) == ["shop__abc123"]


def test_limits_empty_queries_and_ties() -> None:
    indexed = [index(t) for t in CATALOG]
    assert search(indexed, "") == [] and search(indexed, "  ...  ") == [] and search(indexed, "zebra") == []
    assert len(search(indexed, "customer invoice status orders", limit=2)) == 2
    twins = [index(tool("b__x", "Same words.")), index(tool("a__x", "Same words."))]
    assert names(search(twins, "words")) == ["a__x", "b__x"]


def catalog_names() -> dict[str, str]:
    mapped = {t["function"]["name"]: t["function"]["name"].replace("__", ".") for t in CATALOG}
    mapped["event_reply"] = "event_reply"
    return mapped


def offered(offer: ToolOffer) -> list[str]:
    return [d["function"]["name"] for d in offer.descriptors()]


def test_a_small_set_is_offered_whole() -> None:
    offer = ToolOffer(CATALOG, catalog_names(), above=len(CATALOG))
    assert not offer.searching and offered(offer) == [t["function"]["name"] for t in CATALOG]


def test_a_large_set_offers_find_tools_and_then_keeps_what_was_found() -> None:
    reply = tool("event_reply", "Reply in the conversation.")
    offer = ToolOffer([*CATALOG, reply], catalog_names(), above=3)
    assert offer.searching and offered(offer) == ["event_reply", "find_tools"]
    assert str(len(CATALOG)) in offer.descriptors()[1]["function"]["description"]
    result = answer(offer, {"query": "track a parcel shipment", "limit": 1})
    assert [hit["name"] for hit in result["found"]] == ["erp__track_shipment"] and "next turn" in result["note"]
    assert offered(offer) == ["event_reply", "find_tools", "erp__track_shipment"]
    answer(offer, {"query": "invoice pdf"})
    assert offered(offer)[:4] == ["event_reply", "find_tools", "erp__track_shipment", "erp__invoice_pdf"]
    found_before = offer.found
    offer.offer(["erp__track_shipment", "not_a_tool"])  # a replayed step adds nothing new or unknown
    assert offer.found == found_before
    assert offer.descriptors()[2] is CATALOG[0]  # the schema exactly as the gateway described it


def test_a_resumed_run_offers_what_its_logged_search_found() -> None:
    offer = ToolOffer(CATALOG, catalog_names(), above=3)
    logged = answer(ToolOffer(CATALOG, catalog_names(), above=3), {"query": "weather"})
    offer.offer(found_in(logged))
    assert offered(offer) == ["find_tools", "weather__forecast"]
    assert found_in(None) == [] and found_in({"found": "junk"}) == []


@pytest.mark.parametrize("arguments", [{}, {"query": " "}, {"query": 3}, {"query": "x", "limit": True},
                                       {"query": "x", "limit": "5"}])
def test_bad_arguments_say_what_to_fix(arguments: dict[str, Any]) -> None:
    with pytest.raises(BadSearch, match=r"query|limit"):
        answer(ToolOffer(CATALOG, catalog_names(), above=1), arguments)
