"""Screens: the benchmark dashboard, the monitor tabs, help and dialogs."""
