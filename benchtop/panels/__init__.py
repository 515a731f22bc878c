"""What the monitor shows of each source, below any rendering: the units
figures are written in, the views (benchtop.panels.views: each source's
summary lines and tables, as rich Text) and the headless monitor, whose
text is built from those views.  The TUI's widgets draw the same views;
no textual here.
"""
