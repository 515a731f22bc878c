"""`benchtop capture`: what a server runs over a window, read from its own
statement statistics (read-only), and the workload file that runs like it
(`benchtop workload from-capture`)."""
