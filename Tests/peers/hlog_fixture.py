"""Writes an .hlog file with the Python `hdrhistogram` package's HistogramLogWriter, for
Tests/StampedeReportTests/Fixtures/python-writer.hlog (reading files the real tools write).

Usage: python hlog_fixture.py OUT.hlog
Three 1 s intervals of a 1 us .. 1 h, 3-digit histogram; the values are a formula the Swift test
repeats (HistogramLogCodecTests.fixtureValues). The writer's own StartTime line is not used
(hdrhistogram 0.10.8's output_start_time calls a datetime method that does not exist), so the
header's StartTime and BaseTime lines are written here in the writer's format.
"""
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

START = 1764000000.0


def values(interval):
    out = []
    for i in range(1, 2001):
        out.append((i * i * 37 + interval * 7919) % 5_000_000 + 1)
    out.append(3_000_000_000 - interval)  # one value near the top of the range
    return out


def main():
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        writer = HistogramLogWriter(f)
        writer.output_log_format_version()
        f.write("#[StartTime: %f (seconds since epoch), 2025-11-24 16:00:00]\n" % START)
        f.write("#[BaseTime: %f (seconds since epoch)]\n" % START)
        writer.output_legend()
        for interval in range(3):
            h = HdrHistogram(1, 3_600_000_000, 3)
            for v in values(interval):
                h.record_value(v)
            writer.output_interval_histogram(h, interval + 0.0, interval + 1.0, 1000.0)


if __name__ == "__main__":
    main()
