"""`benchtop report`: compare results folders in a table and in plots
(terminal, PNG files or one self-contained HTML file)."""
