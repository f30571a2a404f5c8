"""Sends log records with the OpenTelemetry Python SDK's OTLP/HTTP exporter.

Usage: otlp_send.py ENDPOINT N  (ENDPOINT such as http://127.0.0.1:4318/v1/logs)
Exits 0 once every record was exported (the exporter got a 2xx), 1 otherwise.
"""
import logging
import sys

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

endpoint, count = sys.argv[1], int(sys.argv[2])
failures = []


class Checked(OTLPLogExporter):
    def export(self, batch):
        result = super().export(batch)
        # LogExportResult, LogRecordExportResult in newer SDKs: compare by name.
        if getattr(result, "name", "") != "SUCCESS":
            failures.append(result)
        return result


provider = LoggerProvider(resource=Resource.create({"service.name": "pyapp", "deployment.environment": "test"}))
provider.add_log_record_processor(SimpleLogRecordProcessor(Checked(endpoint=endpoint)))
log = logging.getLogger("otlp-test")
log.addHandler(LoggingHandler(level=logging.INFO, logger_provider=provider))
log.setLevel(logging.INFO)
for i in range(count):
    log.warning("python record %d", i, extra={"order.id": str(i)})
provider.shutdown()
sys.exit(1 if failures else 0)
