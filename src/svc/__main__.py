"""`python -m svc`: the same entry point as the `svc` console script."""

from __future__ import annotations

from svc.cli import main

if __name__ == "__main__":
    main()
