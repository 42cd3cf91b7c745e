"""The few exceptions the builder raises on purpose."""


class SiteBuilderError(Exception):
    """Base class: a problem the user can fix, reported without a traceback."""


class ConfigError(SiteBuilderError, ValueError):
    """A setting in site.toml (or on the command line) is invalid; the message names it."""


class EngineNotFoundError(SiteBuilderError, FileNotFoundError):
    """No UCI engine at the configured path."""


class EngineError(SiteBuilderError, RuntimeError):
    """The engine failed in a way that restarting cannot fix."""
