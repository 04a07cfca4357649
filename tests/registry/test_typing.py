"""The builder makes mypy check each handler against its declaration: its context, its input and its output.

Runs mypy strict (with the project's configuration) on the files of `typing_cases/` in a subprocess bounded
in wall-clock time: `welltyped.py` passes, and `mistyped.py` fails with a handler error on exactly each
line marked `# expect-error`. Imported modules are analysed but not reported (`--follow-imports=silent`),
so only the case file is judged; the mypy cache is private to the run.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).parent / "typing_cases"
#: A cold run (no cache) takes seconds; this bounds a stuck or starved one.
MYPY_SECONDS = 180
MARKER = "# expect-error"
_ERROR = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+):(?:\d+:)? error: (?P<message>.*)$", re.MULTILINE)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mypy cache shared by this module's runs (the first is cold, the next reuse it)."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(case: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--strict",
        "--follow-imports=silent",
        "--cache-dir",
        str(cache),
        "--no-pretty",
        "--no-color-output",
        "--no-error-summary",
        str(case.relative_to(ROOT)),
    ]
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=MYPY_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"mypy did not finish on {case.name} within {MYPY_SECONDS} s")


def _errors(done: subprocess.CompletedProcess[str], case: Path) -> dict[int, str]:
    found = {int(m["line"]): m["message"] for m in _ERROR.finditer(done.stdout)}
    paths = {Path(m["path"]) for m in _ERROR.finditer(done.stdout)}
    assert paths <= {case.relative_to(ROOT)}, done.stdout
    return found


def test_welltyped_declarations_pass(mypy_cache: Path) -> None:
    case = CASES / "welltyped.py"
    done = _mypy(case, mypy_cache)
    assert _errors(done, case) == {}, done.stdout
    assert done.returncode == 0, done.stdout + done.stderr


def test_mistyped_handlers_fail_on_each_marked_line(mypy_cache: Path) -> None:
    case = CASES / "mistyped.py"
    marked = {n for n, line in enumerate(case.read_text().splitlines(), start=1) if line.rstrip().endswith(MARKER)}
    assert len(marked) == 4, "the case file marks a wrong output, input, context and union member"
    done = _mypy(case, mypy_cache)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = _errors(done, case)
    assert set(errors) == marked, done.stdout
    for line, message in errors.items():
        assert 'Argument "handler"' in message, f"line {line}: {message}"
