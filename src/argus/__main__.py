"""`python -m argus` is the `argus` command."""

from argus.cli.main import main

main()
