"""``python -m scopegate.cli``: the same as the ``scopegate`` command."""

from scopegate.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
