"""Parses a scrape (stdin) with the official Prometheus Python client's
parser (the Prometheus text format; with the argument `openmetrics`, its
OpenMetrics parser) and prints its samples as JSON lines:
{"family", "type", "name", "labels", "value"}."""

import json
import sys

if sys.argv[1:] == ["openmetrics"]:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
else:
    from prometheus_client.parser import text_string_to_metric_families

for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        print(json.dumps({
            "family": family.name,
            "type": family.type,
            "name": sample.name,
            "labels": sample.labels,
            "value": sample.value,
        }))
