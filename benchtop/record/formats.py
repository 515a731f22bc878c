"""Text renditions: sysbench-style interval lines and the final summary
(sysbench 1.0.20's layout, which is what users and their parsers know)."""

from __future__ import annotations

import math

from benchtop.record.samples import IntervalStats, RunSummary, pct_key


def _pct_label(p: float) -> str:
    return f"{p:g}"


def lat_ms(v: float) -> str:
    """A latency in ms as sysbench prints it (two decimals), with the digits
    a sub-millisecond value needs to say something (three significant).

    >>> [lat_ms(v) for v in (12.3456, 1.0, 0.0, 0.5, 0.0432, 0.000812)]
    ['12.35', '1.00', '0.00', '0.500', '0.0432', '0.000812']
    """
    if v >= 1 or v <= 0:
        return f"{v:.2f}"
    decimals = min(2 - math.floor(math.log10(v)), 6)
    return f"{v:.{decimals}f}"


def interval_line(iv: IntervalStats, percentile: float, t_offset: float = 0.0) -> str:
    """One report line, byte-compatible with sysbench's for the same numbers.

    The percentile is printed as sysbench does (`lat (ms,95%)`); a
    non-integer percentile keeps its decimals.
    """
    lat = iv.latency_ms.get(pct_key(percentile), 0.0)
    # sysbench's line unless workers are missing: then how many hold a connection, and the refusals
    short = (f" ({iv.connected} connected, {iv.connect_failures} refused)"
             if 0 <= iv.connected < iv.threads else "")
    line = (
        f"[ {iv.t - t_offset:.0f}s ] thds: {iv.threads}{short} tps: {iv.tps:4.2f} qps: {iv.qps:4.2f} "
        f"(r/w/o: {iv.reads_per_s:4.2f}/{iv.writes_per_s:4.2f}/{iv.other_per_s:4.2f}) "
        f"lat (ms,{_pct_label(percentile)}%): {lat_ms(lat):>4} err/s: {iv.errors_per_s:4.2f} "
        f"reconn/s: {iv.reconnects_per_s:4.2f}"
    )
    if iv.paused:
        line += " [paused]"
    if iv.op_latency_ms:
        key = pct_key(percentile)
        parts = [f"{name}: {v.get(key, 0.0):4.2f}" for name, v in iv.op_latency_ms.items()]
        line += f"\n[ {iv.t - t_offset:.0f}s ] lat (ms,{_pct_label(percentile)}%) " + " ".join(parts)
    if iv.rate_mode:
        svc = iv.service_latency_ms.get(pct_key(percentile), 0.0)
        line += (
            f"\n[ {iv.t - t_offset:.0f}s ] queue length: {iv.queue:.1f}, concurrency: {iv.concurrency:.1f}, "
            f"rate: {iv.rate_target:g}, service lat (ms,{_pct_label(percentile)}%): {lat_ms(svc):>4}"
        )
    for g in iv.groups:
        key = pct_key(percentile)
        line += (f"\n[ {iv.t - t_offset:.0f}s ]   {g.name}: thds: {g.threads} tps: {g.tps:4.2f} "
                 f"lat (ms,{_pct_label(percentile)}%): {g.latency_ms.get(key, 0.0):4.2f}")
        if g.rate > 0:
            line += (f" rate: {g.rate:g} queue: {g.queue:.1f} "
                     f"service lat (ms,{_pct_label(percentile)}%): {g.service_latency_ms.get(key, 0.0):4.2f}")
    return line


def summary_text(s: RunSummary, percentile: float, histogram: bool = False, header: str = "") -> str:
    lat = s.latency_ms
    svc = s.service_latency_ms
    t = max(s.time_s, 1e-9)
    lines = []
    if header:
        lines += [header, ""]
    lines += [
        "SQL statistics:",
        "    queries performed:",
        f"        read:                            {s.reads}",
        f"        write:                           {s.writes}",
        f"        other:                           {s.other}",
        f"        total:                           {s.queries}",
        f"    transactions:                        {s.transactions:<6d} ({s.transactions / t:.2f} per sec.)",
        f"    queries:                             {s.queries:<6d} ({s.queries / t:.2f} per sec.)",
        f"    ignored errors:                      {s.error_count:<6d} ({s.error_count / t:.2f} per sec.)",
        f"    reconnects:                          {s.reconnects:<6d} ({s.reconnects / t:.2f} per sec.)",
        "",
        "General statistics:",
        f"    total time:                          {s.time_s:.4f}s",
        f"    total number of events:              {s.transactions}",
        "",
        "Latency (ms):",
        f"         min: {lat_ms(lat.get('min', 0.0)):>39}",
        f"         avg: {lat_ms(lat.get('avg', 0.0)):>39}",
        f"         max: {lat_ms(lat.get('max', 0.0)):>39}",
    ]
    if percentile > 0:
        lines.append(f"        {percentile:3.0f}th percentile: {lat_ms(lat.get(pct_key(percentile), 0.0)):>27}")
    else:
        lines.append("         percentile stats:               disabled")
    lines.append(f"         sum: {lat.get('avg', 0.0) * s.transactions:39.2f}")
    extra = [f"warning: {w}" for w in s.warnings]
    if s.rate > 0:
        extra.append(
            f"    service time (ms): avg {lat_ms(svc.get('avg', 0.0))}, {percentile:g}th "
            f"{lat_ms(svc.get(pct_key(percentile), 0.0))}, max {lat_ms(svc.get('max', 0.0))} "
            "(latency above counts from each intended start)"
        )
    if s.connects:
        extra.append(f"    connections: {s.connects}, connect time avg {s.connect_ms_avg:.2f} ms, initial connection "
                     f"time {s.initial_connection_ms:.0f} ms (before the measured time)")
    if s.workers.event_loops:
        extra.append(f"    event loops: {s.workers.connections} connections on {s.workers.threads} threads, "
                     f"{s.connections_served} served")
    if s.rollbacks:
        extra.append(f"    rolled back by the workload: {s.rollbacks}")
    if s.txn_latency_ms:
        extra.append("    per transaction type (ms):        count      p50      p95      p99      max")
        for name, v in s.txn_latency_ms.items():
            extra.append(f"      {name:<28} {v['count']:>9} {v['p50']:>8.2f} {v['p95']:>8.2f} {v['p99']:>8.2f} {v['max']:>8.2f}")
    if s.groups:
        key = pct_key(percentile) if percentile > 0 else "p95"
        extra.append(f"    thread groups (ms):      threads     rate        tps      avg {key:>8}      p99      max"
                     f" {'svc ' + key:>9}")
        for g in s.groups:
            lat, svc = g.latency_ms, g.service_latency_ms
            rate = f"{g.rate:g}" if g.rate > 0 else "-"
            extra.append(f"      {g.name:<22} {g.threads:>7} {rate:>8} {g.tps:>10.2f} {lat.get('avg', 0.0):>8.2f} "
                         f"{lat.get(key, 0.0):>8.2f} {lat.get('p99', 0.0):>8.2f} {lat.get('max', 0.0):>8.2f} "
                         f"{svc.get(key, 0.0):>9.2f}")
    if s.op_latency_ms:
        extra.append("    per operation (ms):               count      p50      p95      p99      max")
        for name, v in s.op_latency_ms.items():
            extra.append(f"      {name:<28} {v['count']:>9.0f} {v['p50']:>8.2f} {v['p95']:>8.2f} {v['p99']:>8.2f} {v['max']:>8.2f}")
    errs = {k: v for k, v in s.errors.items() if v}
    if errs:
        extra.append("    errors by kind: " + ", ".join(f"{k} {v}" for k, v in errs.items()))
    if s.unfinished:
        extra.append(f"    unfinished at the end: {s.unfinished} (cut short when the run ended, not counted)")
    if s.hosts:
        live = sum(1 for h in s.hosts if h.lost_at is None)
        extra.append(f"    load hosts: {len(s.hosts)}, {live} to the end")
        # the merged summary's percentile and precision (sysbench's latency line above)
        key = pct_key(percentile) if all(pct_key(percentile) in h.latency_ms for h in s.hosts if h.transactions) else "p99"
        head = f"p{_pct_label(percentile)} ms" if key == pct_key(percentile) else "p99 ms"
        extra.append(f"      {'host':<5}{'node':<22}{'threads':>8}{'transactions':>14}{'tps':>12}{head:>10}")
        for h in s.hosts:
            lost = f"  lost at {h.lost_at:.0f}s: {h.lost_reason}" if h.lost_at is not None else ""
            idle = "  idle: no threads given to this host" if h.threads == 0 and not h.transactions else ""
            host_lat = lat_ms(h.latency_ms.get(key, 0.0)) if h.transactions else "-"
            extra.append(f"      {h.host:<5}{h.node[:21]:<22}{h.threads:>8}{h.transactions:>14}{h.tps:>12.2f}"
                         f"{host_lat:>10}{idle}{lost}")
    if s.stopped_by:
        extra.append(f"    stopped by: {s.stopped_by}")
    if extra:
        lines += ["", "benchtop:"] + extra
    if histogram:
        lines += ["", histogram_text(s)]
    return "\n".join(lines)


def histogram_text(s: RunSummary, width: int = 40) -> str:
    """ASCII latency histogram like sysbench --histogram (value, bar, count)."""
    rows = s.latency.coarse(per_decade=20)
    out = ["Latency histogram (values are in milliseconds)", "       value  ------------- distribution ------------- count"]
    top = max((c for _, c in rows), default=0)
    for le, c in rows:
        bar = "*" * max(1, round(c / top * width)) if top else ""
        out.append(f"{le:12.3f} |{bar:<{width}} {c}")
    return "\n".join(out)
