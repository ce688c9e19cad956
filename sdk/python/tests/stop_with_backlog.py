"""An executor of processor `pybacklog.slow` (50 ms a delivery, 16 lanes at once) against the owner
at CHRONOLOG_URL, run with ``run_forever``: prints `ready`, then `handled <event id>` for each
delivery it finished. SIGTERM stops it gracefully (test/python-executor.test.ts sends it with a
backlog waiting): it tells the owner it stops, finishes what it got, and exits 0.
"""

import os
import sys
import threading
import time

from chronolog import Plugin, run_executor

printing = threading.Lock()
plugin = Plugin("pybacklog", "1", events={"pybacklog.item": {"allow": ["*"]}})


@plugin.processor("slow", on="pybacklog.item", key="data.k", concurrency=16)
def slow(ctx):
    time.sleep(0.05)
    with printing:  # one whole line at a time: handlers run in several threads
        sys.stdout.write(f"handled {ctx.event.id}\n")
        sys.stdout.flush()


executor = run_executor([plugin], url=os.environ["CHRONOLOG_URL"], credits=16, max_backoff_s=1.0)
if not executor.wait_ready(30):
    sys.exit(2)
print("ready", flush=True)
executor.run_forever()
print("stopped", flush=True)
