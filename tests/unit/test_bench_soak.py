"""How `make soak` judges CPU per event: a process whose cost grows with history is named; the
whole machine slowing down is not."""

from __future__ import annotations

import pytest

from tests.bench.soak import CPU_GROWTH, CpuSample, cpu_growth


def _soak(seconds: int, cost: dict[str, object]) -> list[CpuSample]:
    """Samples every 10 s at 10 events/s; `cost[name](event)` is that event's CPU seconds."""
    samples, totals, events = [], dict.fromkeys(cost, 0.0), 0
    for at in range(10, seconds + 1, 10):
        for _ in range(100):
            events += 1
            for name, per_event in cost.items():
                totals[name] += per_event(events)  # type: ignore[operator]
        samples.append(CpuSample(float(at), events, dict(totals)))
    return samples


def test_a_process_whose_cost_grows_with_what_it_handled_stands_out() -> None:
    samples = _soak(600, {"gateway": lambda n: 0.002, "router": lambda n: 0.002, "runner": lambda n: 0.0025,
                          "chat app": lambda n: 0.001 + n * 3e-6})  # a log read whole at each send
    growth = cpu_growth(samples)
    assert growth is not None
    assert growth["chat app"] > CPU_GROWTH
    assert [growth[name] for name in ("gateway", "router", "runner")] == pytest.approx([1.0, 1.0, 1.0])


def test_the_whole_machine_slowing_down_is_no_process_growing() -> None:
    def slowing(base: float) -> object:
        return lambda n: base * (1 + n / 3000)  # every process twice as slow by the end

    growth = cpu_growth(_soak(600, {"gateway": slowing(0.002), "router": slowing(0.002),
                                    "chat app": slowing(0.001)}))
    assert growth is not None and max(growth.values()) < 1.01


def test_a_soak_without_two_separate_minutes_after_the_warm_up_is_not_judged() -> None:
    assert cpu_growth(_soak(170, {"gateway": lambda n: 0.002})) is None
    assert cpu_growth(_soak(180, {"gateway": lambda n: 0.002})) is not None
