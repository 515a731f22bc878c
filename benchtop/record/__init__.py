"""The typed record of a run: every value a run, a monitor poll or a results
folder hands its readers (screens, report, metrics, panels, replay).

samples.py (intervals, summaries, hosts, timeline events), controller.py
(the Controller protocol the screens and loops steer a run through, and its
Sample), delegate.py (a controller passing through to another), folder.py
(the results folder: its files, its writer and reader), replay.py (a
folder's monitor snapshots read back), analysis.py (steady state, stalls
and validity of a folder's intervals), formats.py and costs.py (how the
record reads as text).  Readers import this package, never benchtop.run.
"""
