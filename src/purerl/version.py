"""purerl's version, apart from the package's `__init__` so that a module recording it imports no circle."""

__version__ = "0.1.0"
