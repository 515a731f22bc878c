"""What the monitor shows of each source, below any rendering: the units
figures are written in, and the headless monitor (a text line per source per
poll).  The TUI's views and `benchtop monitor --headless` both build on it;
no textual here.
"""
