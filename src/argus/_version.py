"""The package version, read by `pyproject.toml` and `argus --version`."""

__version__ = "0.1.0"
