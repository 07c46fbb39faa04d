"""The distribution's version, read by the build (`pyproject.toml` names this
attribute) and by the server's `initialize` reply, which must not pay for
`importlib.metadata` on the harness's cold path."""

__version__ = "0.1.0"
