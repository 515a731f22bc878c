"""A faithful, small stand-in for ProxySQL's admin interface (port 6032),
for testing benchtop's ProxySQL source without ProxySQL."""

from tests.proxysql_standin.server import Standin, start_standin

__all__ = ["Standin", "start_standin"]
