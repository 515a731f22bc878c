"""The typed record of a run: every value a run, a monitor poll or a results
folder hands its readers (screens, report, metrics, panels, replay).

samples.py (intervals, summaries, hosts, timeline events), costs.py (what
an interval and a run cost, and how that reads as text), knee.py (a knee
search as the dashboard draws it), controller.py (the Controller protocol
the screens and loops steer a run through, and its Sample), delegate.py (a
controller passing through to another), folder.py (the results folder: its
files, its writer and reader), replay.py (a folder's monitor snapshots read
back), analysis.py (steady state, stalls and validity of a folder's
intervals), formats.py (how the record reads as text).  Readers import this package, never benchtop.run.
"""
