"""Statistics shared by bench/run and its parts."""
import statistics


def median(v):
    """Median of the values that are not None; None when there are none."""
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
