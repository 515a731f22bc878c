"""`benchtop knee`: the concurrency (or arrival rate) with the highest
throughput under a latency limit, found by search rather than a sweep.

usl.py fits the Universal Scalability Law to the probes, search.py decides
where to probe next (pure logic, no engine), probe.py decides when a probe's
throughput is steady, runner.py drives one live run through the probes and
answer.py turns the result into summary.json's `knee` and one paragraph."""
