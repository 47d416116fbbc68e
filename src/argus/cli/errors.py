"""How the `argus` command reports a user error: the error's code, message and hint on stderr (secrets scrubbed),
exit status 2, no traceback — unless ``--debug`` (or ``ARGUS_DEBUG=1``) asks for the traceback."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from argus.agent.providers.secrets import scrub_secrets
from argus.diagnostics import ArgusError


def debugging() -> bool:
    return os.environ.get("ARGUS_DEBUG", "") not in ("", "0")


def user_error(error: ArgusError) -> NoReturn:
    """Report `error` and exit 2 (re-raise it with ``--debug``)."""
    if debugging():
        raise error
    sys.stderr.write(scrub_secrets(str(error)) + "\n")
    raise typer.Exit(2)
