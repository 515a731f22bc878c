"""Test-suite wide configuration: the real-server fixtures are a plugin."""

pytest_plugins = ["tests.fixtures.servers"]
