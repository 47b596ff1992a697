"""CPU steal of the machine the benchmarks run on (``/proc/stat``): nothing happens on import.

On a shared VM the hypervisor gives part of the cores' time to other guests (*steal*); that, not
the load average, explains much of the spread between repetitions here (15-25 % of the time while
builds ran on 2026-12-02, by ``vmstat``). ``run_all.run_parts`` records it per part and ``report``
prints it beside the machine facts. Kept apart from ``_common`` (which sets environment variables
on import) so that tests can import it.
"""

from __future__ import annotations


def cpu_counters(text: str) -> tuple[int, int]:
    """``(steal, total)`` clock ticks of all CPUs from the text of ``/proc/stat`` (its ``cpu`` line:
    user nice system idle iowait irq softirq steal guest guest_nice, proc(5)). ``total`` leaves out
    guest and guest_nice, which Linux already counts in user and nice; a kernel without the steal
    column gives steal 0.

    Raises:
        ValueError: the text has no ``cpu`` line of numbers.
    """
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(x) for x in fields[1:]]
            if len(ticks) < 4:
                break
            return (ticks[7] if len(ticks) > 7 else 0), sum(ticks[:8])
    raise ValueError("/proc/stat: no 'cpu' line")


def read_cpu_counters() -> tuple[int, int] | None:
    """:func:`cpu_counters` of this machine now; ``None`` where ``/proc/stat`` cannot be read."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return cpu_counters(f.read())
    except (OSError, ValueError):
        return None


def steal_percent(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share (%) of the CPUs' time between two :func:`read_cpu_counters` that the hypervisor
    gave to other guests (*steal*): on a shared VM the cause of most of the spread between
    repetitions, which the load average does not show. ``None`` without both readings or ticks."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round(100 * (after[0] - before[0]) / (after[1] - before[1]), 1)
