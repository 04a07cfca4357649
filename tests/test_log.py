"""The lazy logger: records under its name, from its caller's place, with `logging` imported only to write one."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from svc._log import LazyLogger


def _write(log: LazyLogger) -> None:
    log.debug("debug %s", 1)
    log.info("info %s", 2)
    log.warning("warning %s", 3)
    log.error("error %s", 4)


def test_records_keep_the_loggers_name_and_the_callers_place(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="svc.test")
    _write(LazyLogger("svc.test"))
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("svc.test", "DEBUG", "debug 1"),
        ("svc.test", "INFO", "info 2"),
        ("svc.test", "WARNING", "warning 3"),
        ("svc.test", "ERROR", "error 4"),
    ]
    assert {(r.filename, r.funcName) for r in caplog.records} == {("test_log.py", "_write")}


def test_logging_is_imported_by_the_first_record_and_shutdown_needs_none() -> None:
    probe = (
        "import sys\n"
        "from svc._log import LazyLogger, shutdown\n"
        "log = LazyLogger('svc.probe')\n"
        "shutdown()\n"
        "before = 'logging' in sys.modules\n"
        "log.warning('written')\n"
        "print(before, 'logging' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout == "False True\n"
    assert result.stderr == "written\n"
