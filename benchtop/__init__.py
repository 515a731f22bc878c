"""benchtop: a live benchmark controller and monitor for database people."""

__version__ = "0.1.0"
