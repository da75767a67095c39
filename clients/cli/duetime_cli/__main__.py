"""``python -m duetime_cli``: the same as the ``duetime`` command."""

from duetime_cli.app import main

main()
