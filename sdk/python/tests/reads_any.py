"""Reads the log with the Python client given several owners (CHRONOLOG_URL, a comma-separated
list, a standby first) and ``reads="any"``, as CHRONOLOG_TOKEN: prints how many events it read,
the role of the owner that answered a ReadLog (its ``chronolog-role`` metadata), and how many
executors ListExecutors lists (a read the standby refuses: the leader answers it).
test/standby-reads.test.ts starts a leader and a standby on PostgreSQL for it.
"""

import os

from chronolog import Client
from chronolog.gen.chronolog.v1 import admin_pb2, log_pb2

with Client(os.environ["CHRONOLOG_URL"], os.environ["CHRONOLOG_TOKEN"], reads="any", emit_via="unary") as client:
    print(sum(1 for _ in client.read()), flush=True)
    _, call = client.log.ReadLog.with_call(log_pb2.ReadLogRequest(page_size=1))
    print(dict(call.initial_metadata()).get("chronolog-role"), flush=True)
    print(len(client.admin.ListExecutors(admin_pb2.ListExecutorsRequest()).executors), flush=True)
