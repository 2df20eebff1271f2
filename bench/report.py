#!/usr/bin/env python3
"""Redraws the figures and summary.md of one results folder: python3 bench/report.py DIR"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from plfsbench import report  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: report.py RESULTS_DIR")
    report.make(os.path.abspath(sys.argv[1]))
