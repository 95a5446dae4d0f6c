"""``python -m attention <command>``: see :mod:`attention.cli`."""
from .cli import main

raise SystemExit(main())
