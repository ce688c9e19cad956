"""pywork: a Python executor that does every kind of work under a cause.

Run by test/python-executor.test.ts against a real owner, which then checks the
events, documents and timers it produced and that a retried delivery derived the
same ids (nothing written twice). Prints "executor ready" on stderr once welcomed.

- processor ``pywork.worker`` on ``job.submitted`` (lanes by job id):
  - ``mode: "write"`` (default): creates a ``pyjob`` document without ``_id`` (position 0),
    patches (1) and replaces (2) it, creates (3) and deletes (4) a scratch document, sets a
    cron timer with a derived id (5) and an every-hour timer with its own id (6), arms a
    delay by interval (7) and one at a moment on a fresh chain (8), reads the documents
    back, and emits ``job.worked`` with what it got (9). A job marked ``flaky`` then fails
    its first attempt: the retry makes the same calls and must find them all done;
  - ``mode: "cancel"``: arms a delay (0) and cancels it (1), sets a timer (2) and
    unschedules it (3), emits ``job.worked`` (4); a ``flaky`` job then fails its first
    attempt: the retry's requests are answered from the log (nothing armed or removed again,
    no NOT_FOUND for what the first attempt removed);
- action ``pywork.file`` (anyone may call it): creates a ``pyjob`` document (position 0
  under its ``action.started``) and arms ``pywork.remind`` 200 ms later (1);
- action ``pywork.remind``: emits ``job.reminded`` with the timer that called it, its
  chain depth and whether it started before its due moment (``early``: the executor holds,
  so a call sent ahead must still start at its moment);
- action ``pywork.slow``: takes 400 ms (a SIGTERM, i.e. ``stop()``, during it must hand in its result);
- processor ``pywork.patient`` on ``job.patient`` (ack timeout 500 ms, grace 5 s): waits up to 2 s
  for its cancel, then emits ``job.worked`` with the cancel reason it saw and acks OK (a late ack).

    PYTHONPATH=sdk/python .venv/bin/python sdk/python/tests/work_executor.py --url URL  (token: CHRONOLOG_TOKEN)
"""

import argparse
import os
import signal
import sys
import time
from datetime import datetime, timezone

from chronolog import ActionContext, ChronologError, DeliveryContext, Plugin, run_executor

JOB = {"type": "object", "required": ["job_id"], "properties": {"job_id": {"type": "string"}, "flaky": {"type": "boolean"}, "mode": {"enum": ["write", "cancel"]}}}

pywork = Plugin(
    "pywork",
    version="1",
    events={
        "job.submitted": {"allow": ["*"], "schema": JOB},
        "job.worked": {"schema": {"type": "object", "required": ["job_id"]}},
        "job.reminded": {"schema": {"type": "object", "required": ["job_id", "what"]}},
        "job.patient": {"allow": ["*"]},
    },
    collections={"pyjob": {"private_fields": ["secret"], "schema": {"type": "object", "required": ["job_id"]}}},
)

AT = datetime(2099, 1, 1, 9, 0, tzinfo=timezone.utc)


@pywork.action("remind", allow=["*"])
def remind(ctx: ActionContext, input: dict) -> dict:
    """Records that time called it: the timer id, the chain depth and whether it came before its moment."""
    timer_id = ctx.scheduled.timer_id if ctx.scheduled else ""
    early = ctx.scheduled is not None and datetime.now(timezone.utc) < ctx.scheduled.due
    ctx.emit("job.reminded", {"job_id": input["job_id"], "what": input["what"], "timer_id": timer_id, "chain_depth": ctx.chain_depth, "early": early})
    return {}


@pywork.action("file", allow=["*"])
def file(ctx: ActionContext, input: dict) -> dict:
    """Files a job document and a reminder 200 ms later, under the call's action.started."""
    created = ctx.collections.create("pyjob", {"job_id": input["job_id"], "status": "filed"})
    soon = ctx.delay("pywork.remind", {"job_id": input["job_id"], "what": "soon"}, {"interval_ms": 200}, "unbounded")
    return {"doc_id": created.doc["_id"], "created_seq": created.seq, "delay_id": soon.delay_id}


@pywork.action("slow", allow=["*"])
def slow(ctx: ActionContext, input: dict) -> dict:
    """Takes 400 ms (a call that a stop() has to wait for)."""
    time.sleep(0.4)
    return {"job_id": input["job_id"]}


@pywork.processor("worker", on="job.submitted", key="data.job_id", retry_delays_ms=[200, 400])
def work(ctx: DeliveryContext) -> None:
    """Does the work of the job's mode under the delivery (see the module docstring)."""
    job = ctx.data["job_id"]
    if ctx.data.get("mode") == "cancel":
        armed = ctx.delay("pywork.remind", {"job_id": job, "what": "cancelled"}, {"interval_ms": 60_000}, "unbounded")
        ctx.cancel_delay(armed.delay_id)
        timer = ctx.schedule("pywork.remind", {"job_id": job, "what": "stopped"}, {"every_ms": 60_000}, timer_id=f"gone-{job}")
        ctx.unschedule(timer.id)
        ctx.emit("job.worked", {"job_id": job, "delay": armed.delay_id, "timer": timer.id})
        if ctx.data.get("flaky") and ctx.attempt == 1:
            raise RuntimeError(f"job {job} is flaky: failing attempt 1 after its work")
        return
    created = ctx.collections.create("pyjob", {"job_id": job, "status": "new", "secret": "s3"})
    doc_id = created.doc["_id"]
    patched = ctx.collections.patch("pyjob", doc_id, set={"status": "working", "meta.by": "py"}, unset=["secret"])
    replaced = ctx.collections.replace("pyjob", doc_id, {"job_id": job, "status": "done"})
    ctx.collections.create("pyjob", {"_id": f"scratch-{job}", "job_id": job})
    deleted = ctx.collections.delete("pyjob", f"scratch-{job}")
    weekly = ctx.schedule("pywork.remind", {"job_id": job, "what": "weekly"}, {"cron": "0 9 * * 1", "zone": "Europe/Berlin"})
    tick = ctx.schedule("pywork.remind", {"job_id": job, "what": "tick"}, {"every_ms": 3_600_000}, timer_id=f"tick-{job}", overdue={"max_lateness_ms": 500})
    later = ctx.delay("pywork.remind", {"job_id": job, "what": "later"}, {"interval_ms": 86_400_000}, "on_time_or_never")
    at = ctx.delay("pywork.remind", {"job_id": job, "what": "at"}, {"at": AT}, {"max_lateness_ms": 60_000}, fresh_chain=True)
    found = ctx.collections.find("pyjob", {"job_id": job}, sort={"_id": 1})
    ctx.emit(
        "job.worked",
        {
            "job_id": job,
            "doc_id": doc_id,
            "seqs": [created.seq, patched.seq, replaced.seq, deleted.seq],
            "doc": ctx.collections.get("pyjob", doc_id),
            "found": [d["_id"] for d in found],
            "weekly": weekly.id,
            "tick": tick.id,
            "later": later.delay_id,
            "later_due": later.due.isoformat(),
            "at": at.delay_id,
            "at_due": at.due.isoformat(),
        },
    )
    if ctx.data.get("flaky") and ctx.attempt == 1:
        raise RuntimeError(f"job {job} is flaky: failing attempt 1 after its work")


@pywork.processor("patient", on="job.patient", ack_timeout_ms=500, timeout_grace_ms=5_000, retry_delays_ms=[100])
def patient(ctx: DeliveryContext) -> None:
    """Outlives its ack timeout: records the cancel it was told of, then acks OK anyway."""
    cancelled = ctx.cancelled.wait(2.0)
    ctx.emit("job.worked", {"job_id": ctx.data["job_id"], "cancelled": cancelled, "reason": ctx.cancel_reason, "attempt": ctx.attempt})


def main() -> None:
    """Runs the executor until SIGTERM; exits 1 when the owner refuses it."""
    parser = argparse.ArgumentParser(description="pywork: work under a cause from Python")
    parser.add_argument("--url", default=os.environ.get("CHRONOLOG_URL", "http://127.0.0.1:50051"))
    args = parser.parse_args()
    executor = run_executor([pywork], url=args.url, token=os.environ.get("CHRONOLOG_TOKEN"), max_backoff_s=1.0)
    signal.signal(signal.SIGTERM, lambda *_: executor.stop())
    try:
        if executor.wait_ready(30):
            print("executor ready", file=sys.stderr, flush=True)
        executor.run_forever()
    except ChronologError:
        sys.exit(1)


if __name__ == "__main__":
    main()
