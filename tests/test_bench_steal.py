"""CPU steal of a benchmark run (bench/_steal.py) and its sentence in the generated docs (bench/report.py).

Pure functions over ``/proc/stat`` text and a results document; nothing is timed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from _steal import cpu_counters, read_cpu_counters, steal_percent
from report import _machine

# proc(5): cpu user nice system idle iowait irq softirq steal guest guest_nice
_STAT = "cpu  100 5 20 800 10 1 4 60 7 0\ncpu0 50 2 10 400 5 0 2 30 3 0\nintr 1 2 3\n"


def test_counters_are_the_cpu_line_steal_and_total_without_guest() -> None:
    # total = 100+5+20+800+10+1+4+60 = 1000; guest (7) is already inside user
    assert cpu_counters(_STAT) == (60, 1000)


def test_a_kernel_without_the_steal_column_gives_zero_steal() -> None:
    assert cpu_counters("cpu 10 0 5 85 0 0 0\n") == (0, 100)


@pytest.mark.parametrize("text", ["", "intr 1 2\n", "cpu 1 2\n"])
def test_text_without_a_cpu_line_of_numbers_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        cpu_counters(text)


def test_steal_percent_is_the_share_of_the_ticks_between_two_readings() -> None:
    assert steal_percent((60, 1000), (110, 1200)) == 25.0
    assert steal_percent((60, 1000), (60, 1000)) is None  # no ticks passed
    assert steal_percent(None, (60, 1000)) is None
    assert steal_percent((60, 1000), None) is None


def test_this_machine_has_readable_counters() -> None:
    reading = read_cpu_counters()
    if not Path("/proc/stat").is_file():
        assert reading is None
        return
    assert reading is not None
    steal, total = reading
    assert 0 <= steal <= total


def _results(steal: dict[str, float | None]) -> dict[str, object]:
    machine = {
        "nproc": 2, "cpu": "X", "cpu_flags": ["sha_ni"], "load_average": [0.1, 0.2, 0.3],
        "kernel": "6.1", "python": "3.11.7", "openssl": "OpenSSL 3.0", "deflate_engine": "zlib-ng 2.3.3",
        "python_zlib": "1.2.13", "zip": "Zip 3.0", "sha256sum": "sha256sum 9.1", "docker": "Docker 20.10",
    }  # fmt: skip
    return {"machine": machine, "steal_percent": steal}


def test_the_machine_line_names_the_steal_of_each_part() -> None:
    line = _machine(_results({"goals": 18.5, "cache": None, "curves": 3.0}))
    assert line.endswith("during each part: goals 18.5 %, curves 3.0 %.")


def test_the_machine_line_has_no_steal_sentence_without_readings() -> None:
    assert "steal" not in _machine(_results({"goals": None}))
    assert "steal" not in _machine({"machine": _results({})["machine"]})
