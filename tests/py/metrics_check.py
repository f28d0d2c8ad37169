"""Parses an OpenMetrics scrape (stdin) with the official Prometheus Python
client's parser and prints its samples as JSON lines:
{"family", "type", "name", "labels", "value"}."""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        print(json.dumps({
            "family": family.name,
            "type": family.type,
            "name": sample.name,
            "labels": sample.labels,
            "value": sample.value,
        }))
