"""Reads an .hlog file with the Python `hdrhistogram` package's HistogramLogReader and prints, as
JSON, what it decoded: per interval and for all intervals added up, the start (seconds after the
log's StartTime), total count, max, every recorded bucket (highest equivalent value, count), and
percentiles 50, 90, 99, 99.9 by HdrHistogram's Java rule (the count at a percentile is
ceil(p * total / 100), p one ulp down; the value is that bucket's highest equivalent value), which
Stampede's histograms (hdrhistogram-swift) follow too. The package's own
get_value_at_percentile rounds the count to nearest instead; it is printed as "p_native".

Usage: python hlog_read.py FILE.hlog   (stdlib + hdrhistogram; reads only the file)
"""
import json
import math
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

PERCENTILES = [50.0, 90.0, 99.0, 99.9]


def java_value_at_percentile(h, p):
    requested = min(max(math.nextafter(p, -math.inf), 0.0), 100.0)
    target = max(1, math.ceil(requested * h.get_total_count() / 100.0))
    running = 0
    for index in range(h.counts_len):
        running += h.get_count_at_index(index)
        if running >= target:
            return h.get_highest_equivalent_value(h.get_value_from_index(index))
    return 0


def describe(h, start):
    return {
        "start": start,
        "total": h.get_total_count(),
        "max": h.get_max_value(),
        "buckets": [[v.value_iterated_to, v.count_at_value_iterated_to] for v in h.get_recorded_iterator()],
        "p": {str(p): java_value_at_percentile(h, p) for p in PERCENTILES},
        "p_native": {str(p): h.get_value_at_percentile(p) for p in PERCENTILES},
    }


def main():
    reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3_600_000_000, 3))
    total = HdrHistogram(1, 3_600_000_000, 3)
    intervals = []
    for _ in range(100_000):  # bounded: a test file has a handful of lines
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        start = h.get_start_time_stamp() / 1000.0 - reader.get_start_time_sec()
        intervals.append(describe(h, round(start, 3)))
        total.add(h)
    print(json.dumps({"start_time": reader.get_start_time_sec(), "intervals": intervals, "total": describe(total, 0.0)}))


if __name__ == "__main__":
    main()
