"""Fixtures of the execution-plane tests (a pytest plugin, see `tests/conftest.py`): a probe registry, its
executor, and engines of chosen bounds. The `/events` and executions-route tests use them too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from svc.nursery import Engine, Limits
from svc.registry import Registry
from svc.runtime import Executor
from tests.nursery._probe import Gates, Tap, build_probe_registry, open_probe_executor


@pytest.fixture
def gates() -> Gates:
    """The gates the probe handlers of this test wait on."""
    return Gates()


@pytest.fixture
def probe_registry(gates: Gates) -> Registry:
    """`executions.*` and the probe capabilities."""
    return build_probe_registry(gates)


@pytest.fixture
async def probe_executor(probe_registry: Registry, tmp_path: Path) -> AsyncIterator[Executor]:
    """The probe registry's executor over an empty directory, with an engine of default bounds."""
    root = tmp_path / "empty"
    root.mkdir()
    async with open_probe_executor(probe_registry, root) as executor:
        yield executor


@pytest.fixture
def make_engine(probe_executor: Executor) -> Callable[..., Engine]:
    """An engine with the given `Limits` fields, on a new executor of the probe executor's runtime."""

    def make(**limits: Any) -> Engine:
        executor = Executor(
            probe_executor.runtime,
            probe_executor.supervisor,
            built=(lambda x: Engine(x, Limits(**limits)),),
        )
        return executor.components.get(Engine)

    return make


@pytest.fixture
def engine(probe_executor: Executor) -> Engine:
    """The probe executor's engine (default bounds)."""
    return probe_executor.components.get(Engine)


@pytest.fixture
def tap(engine: Engine) -> Tap:
    """Every frame the default engine's store publishes during the test."""
    return Tap(engine.store)
