"""An OTLP/HTTP receiver for the tests: accepts protobuf `POST /v1/traces`
and `/v1/metrics` on 127.0.0.1 (port 0, printed first), decodes them with
the official `opentelemetry-proto` package and appends one JSON line per
span or metric to the file named by argv[1]; the raw bodies go to
argv[1] + ".raw" (for the secret checks).

Usage: python otlp_receiver.py OUT.jsonl
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT = sys.argv[1]
LOCK = threading.Lock()


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(kvs):
    return {kv.key: value_of(kv.value) for kv in kvs}


def spans(body):
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "type": "span",
                    "name": span.name,
                    "kind": span.kind,
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "status": span.status.code,
                    "attributes": attributes(span.attributes),
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                }


def metrics(body):
    request = metrics_service_pb2.ExportMetricsServiceRequest()
    request.ParseFromString(body)
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                yield {"type": "metric", "name": metric.name, "data": MessageToDict(metric)}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/v1/traces":
            lines, reply = spans(body), trace_service_pb2.ExportTraceServiceResponse()
        elif self.path == "/v1/metrics":
            lines, reply = metrics(body), metrics_service_pb2.ExportMetricsServiceResponse()
        else:
            self.send_error(404)
            return
        with LOCK:
            with open(OUT, "a", encoding="utf-8") as out:
                for line in lines:
                    out.write(json.dumps(line) + "\n")
            with open(OUT + ".raw", "ab") as raw:
                raw.write(body)
        payload = reply.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
