"""Parses Prometheus text format (file argv[1]) with prometheus_client's
parser and prints one JSON object per sample: family, type, name, labels,
value. Run with Debian's /usr/bin/python3 (python3-prometheus-client)."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
for family in text_string_to_metric_families(text):
    for s in family.samples:
        print(json.dumps({"family": family.name, "type": family.type,
                          "name": s.name, "labels": s.labels,
                          "value": s.value}))
