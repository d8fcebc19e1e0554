"""Deterministic fake weather forecasts (same city and unit always give the same answer)."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel

Unit = Literal["celsius", "fahrenheit"]
CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "fog", "windy")


class DayForecast(BaseModel):
    day: int
    conditions: str
    high: float
    low: float


class Forecast(BaseModel):
    city: str
    unit: Unit
    conditions: str
    temperature: float
    humidity: int
    wind_kph: int
    storm: bool
    days: list[DayForecast]


def _seed(city: str) -> int:
    return int.from_bytes(hashlib.sha256(city.strip().lower().encode()).digest()[:8], "big")


def _convert(celsius: float, unit: Unit) -> float:
    return round(celsius if unit == "celsius" else celsius * 9 / 5 + 32, 1)


def forecast_for(city: str, unit: Unit = "celsius", storm_cities: frozenset[str] = frozenset()) -> Forecast:
    """Fake forecast; a city whose name contains "storm" (or listed in `storm_cities`) gets a storm."""
    seed = _seed(city)
    storm = "storm" in city.lower() or city.strip().lower() in storm_cities
    base_c = (seed % 35) - 5  # -5 .. 29 °C
    conditions = "storm" if storm else CONDITIONS[seed % len(CONDITIONS)]
    days = [
        DayForecast(
            day=i + 1,
            conditions="storm" if storm and i == 0 else CONDITIONS[(seed >> (i + 3)) % len(CONDITIONS)],
            high=_convert(base_c + 3 + (seed >> i) % 4, unit),
            low=_convert(base_c - 4 + (seed >> (i + 1)) % 3, unit),
        )
        for i in range(3)
    ]
    return Forecast(
        city=city,
        unit=unit,
        conditions=conditions,
        temperature=_convert(base_c, unit),
        humidity=40 + seed % 55,
        wind_kph=(70 + seed % 40) if storm else 5 + seed % 30,
        storm=storm,
        days=days,
    )


def describe(f: Forecast) -> str:
    """One human-readable line for the text content block."""
    symbol = "°C" if f.unit == "celsius" else "°F"
    return (
        f"{f.city}: {f.conditions}, {f.temperature}{symbol}, humidity {f.humidity}%, wind {f.wind_kph} km/h"
        + (" — STORM WARNING" if f.storm else "")
    )
