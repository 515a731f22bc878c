"""What the monitor shows of each source, below any rendering: the panels'
field names, the facts a summary line states, and the units they are written
in.  The TUI's views and the headless monitor both build on it; no textual."""
