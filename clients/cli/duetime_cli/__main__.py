"""``python -m duetime_cli``: the same as the ``duetime`` command."""

from duetime_cli.main import main

main()
