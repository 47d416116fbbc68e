"""The `argus` command. Each subcommand is a thin shell over a library function that users can
call from Python; no logic lives here that a library user cannot reach."""
