# -*- coding: utf-8 -*-
"""tests/monitoring imports its helper module metric_names from this directory."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
