"""What the browser tests tell the person who ran them, printed at the end of the run (`pytest_terminal_summary`).

The screenshots' folder and the accessibility findings below the failing impacts are worth reading after a green
run too; pytest shows a passing test's output only on request, so the tests add lines here instead.
"""

from __future__ import annotations

#: Lines for the end of the run, in the order the tests added them.
LINES: list[str] = []


def note(line: str) -> None:
    """Add a line to the end-of-run summary."""
    LINES.append(line)
