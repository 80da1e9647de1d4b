"""``python -m altarr.cli``: the ``altarr`` command."""

from .app import main

main()
