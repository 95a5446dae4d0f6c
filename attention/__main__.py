"""``python -m attention <command>``: see :mod:`attention.book.cli`."""

from .book.cli import main

raise SystemExit(main())
