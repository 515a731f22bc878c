"""A run's options: run_options.py builds RunOptions from a command line, a
scenario's settings or the pytest plugin's keywords, checked by one table."""
