"""A run on many load hosts (`--cluster ADDRESS --load-hosts N`), a part of
its own above the run: Ray (the `cluster` extra) is imported here and
nowhere else, an import contract says so.

- controller: ClusterController, the run controller over the hosts
- group: HostGroup, the hosts' engines as one engine
- merge: thread shares, merged readings, per-host interval histograms
- loadhost: the actors (a host's engine; each node's agent)
- hostlink: the local sockets between an agent and its node's hosts
- messages: the typed requests that cross both hops
- connect: reaching Ray, and its errors in one line
"""
