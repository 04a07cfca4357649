"""The terminal view of an execution run by `svc run`: its steps, log lines and a progress bar on stderr."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from svc.nursery import Engine, Execution

__all__ = ["watch"]


async def watch(engine: Engine, execution: Execution, *, live: bool) -> None:
    """Show the execution's steps and progress on stderr (a terminal) until it ends."""
    subscriber, replay, _ = engine.store.subscribe(frozenset({execution.id}))
    bar_shown = False
    try:
        for frame in [*replay]:
            bar_shown = _show(msgspec.json.decode(frame), live, bar_shown)
        while not execution.final or subscriber.frames:
            for frame in await subscriber.next_frames():
                bar_shown = _show(msgspec.json.decode(frame), live, bar_shown)
    finally:
        engine.store.unsubscribe(subscriber)
        if bar_shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _show(event: dict[str, Any], live: bool, bar_shown: bool) -> bool:
    kind, data = event.get("type"), event.get("data") or {}
    out = sys.stderr
    if kind == "execution.step.started":
        out.write(("\r\x1b[K" if bar_shown and live else "\n" if bar_shown else "") + f"  … {data['title']}\n")
        bar_shown = False
    elif kind == "execution.step.completed":
        mark = "✓" if data.get("ok") else "✗"
        out.write(f"  {mark} {data['name']}" + (f": {data['detail']}" if data.get("detail") else "") + "\n")
    elif kind == "execution.progress" and live:
        total = data.get("total") or 0
        current = data.get("current", 0)
        width = 24
        filled = int(width * current / total) if total else 0
        bar = "#" * filled + "-" * (width - filled)
        label = f"{current}/{total}" if total else str(current)
        out.write(f"\r\x1b[K  [{bar}] {label} {data.get('message') or ''}")
        bar_shown = True
    elif kind == "execution.log" and data.get("stream") in ("stdout", "stderr"):
        out.write(f"  {data['message']}\n")
    out.flush()
    return bar_shown
