"""Kernel durations from ncu's CSV output (`--csv --metrics gpu__time_duration.sum`), shared by
ncu_durations.py and ncu_cells.py."""
import csv

NS_PER_UNIT = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}


def kernel_durations(path):
    """(kernel name, grid size, duration in ns) of each profiled kernel, in launch order.

    Lines that are not CSV rows (the profiled program's own output, ncu's ==PROF== lines) are
    skipped: every CSV row starts with a quote."""
    rows = list(csv.reader(line for line in open(path) if line.startswith('"')))
    header = rows[0]
    name, grid = header.index("Kernel Name"), header.index("Grid Size")
    metric, unit, value = (header.index(k) for k in ("Metric Name", "Metric Unit", "Metric Value"))
    return [(r[name], r[grid], float(r[value].replace(",", "")) * NS_PER_UNIT[r[unit]])
            for r in rows[1:] if r[metric] == "gpu__time_duration.sum"]
