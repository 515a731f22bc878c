"""Widgets of the dashboard: charts, histogram, header, timeline, panels."""
