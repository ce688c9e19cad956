"""pyshop: a Chronolog executor written in Python.

It carries the plugin ``pyshop``, registered by the owner from its hello:

- event ``cart.submitted`` (anyone may emit it) and ``cart.checked`` (no
  ``allow``: only code under a cause may emit it);
- action ``pyshop.total``: sums ``price * qty`` over the cart's items (callers
  from outside may call it too: ``allow: ["*"]``);
- processor ``pyshop.checker`` on ``cart.submitted`` (lanes by cart id): calls
  ``pyshop.total`` and emits ``cart.checked`` under the delivery. A cart with
  no items fails terminally (``processor.failed`` at once); a cart marked
  ``flaky`` fails its first attempt after doing its work, and the retry finds
  that work in the log (same derived ids: nothing written twice).

Run (with an owner on 127.0.0.1:50051, from the repository's top folder)::

    .venv/bin/python examples/python/executor.py [--url URL] [--token TOKEN]
    bin/chronolog emit cart.submitted '{"cart_id":"c-1","items":[{"sku":"tea","price":4.5,"qty":2}]}'
    bin/chronolog tail

The token may also come from CHRONOLOG_TOKEN, the URL from CHRONOLOG_URL. An
owner that refuses the token (UNAUTHENTICATED), its principal's role
(PERMISSION_DENIED) or its hello (INVALID_ARGUMENT) makes it print the owner's
message and exit with status 1.
"""

from decimal import ROUND_HALF_UP, Decimal
import argparse
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python"))

from chronolog import ActionContext, ChronologError, DeliveryContext, Plugin, TerminalError, run_executor  # noqa: E402

ITEM = {
    "type": "object",
    "required": ["sku", "price", "qty"],
    "additionalProperties": False,
    "properties": {
        "sku": {"type": "string", "minLength": 1},
        "price": {"type": "number", "minimum": 0},
        "qty": {"type": "integer", "minimum": 1},
    },
}

pyshop = Plugin(
    "pyshop",
    version="1",
    events={
        "cart.submitted": {
            "description": "A customer submitted a cart.",
            "allow": ["*"],
            "schema": {
                "type": "object",
                "required": ["cart_id", "items"],
                "additionalProperties": False,
                "properties": {
                    "cart_id": {"type": "string", "minLength": 1},
                    "items": {"type": "array", "items": ITEM},
                    "flaky": {"type": "boolean"},
                },
            },
        },
        "cart.checked": {
            "description": "pyshop.checker priced a cart (emitted under the cart.submitted delivery).",
            "schema": {
                "type": "object",
                "required": ["cart_id", "total", "items"],
                "properties": {"cart_id": {"type": "string"}, "total": {"type": "number"}, "items": {"type": "integer"}},
            },
        },
    },
)


@pyshop.action("total", allow=["*"], input_schema={"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": ITEM}}})
def total(ctx: ActionContext, input: dict) -> dict:
    """Sums price * qty over the items in whole cents (each price rounded half up, so 0.1 + 0.2 is 0.3)."""
    cents = sum(int((Decimal(str(item["price"])) * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP)) * item["qty"] for item in input["items"])
    return {"total": cents / 100, "items": sum(item["qty"] for item in input["items"])}


@pyshop.processor("checker", on="cart.submitted", key="data.cart_id", retry_delays_ms=[200, 400])
def check(ctx: DeliveryContext) -> None:
    """Prices a submitted cart through pyshop.total and records cart.checked."""
    items = ctx.data["items"]
    if not items:
        raise TerminalError(f"cart {ctx.data['cart_id']} has no items")
    priced = ctx.call("pyshop.total", {"items": items})  # position 0 under the delivery
    ctx.emit("cart.checked", {"cart_id": ctx.data["cart_id"], "total": priced.output["total"], "items": priced.output["items"]})  # position 1
    if ctx.data.get("flaky") and ctx.attempt == 1:
        raise RuntimeError(f"cart {ctx.data['cart_id']} is flaky: failing attempt 1 after its work")


def main() -> None:
    """Parses the flags, runs the executor until SIGTERM or Ctrl-C."""
    parser = argparse.ArgumentParser(description="pyshop: a Python Chronolog executor")
    parser.add_argument("--url", default=os.environ.get("CHRONOLOG_URL", "http://127.0.0.1:50051"))
    parser.add_argument("--token", default=os.environ.get("CHRONOLOG_TOKEN"))
    parser.add_argument("--credits", type=int, default=8)
    args = parser.parse_args()

    executor = run_executor([pyshop], url=args.url, token=args.token, credits=args.credits, max_backoff_s=1.0)
    signal.signal(signal.SIGTERM, lambda *_: executor.stop())
    try:
        if executor.wait_ready(30):
            print("executor ready", file=sys.stderr, flush=True)
        executor.run_forever()
    except ChronologError:
        # The owner refused the stream for good (a bad token, a role that may not
        # subscribe, a rejected hello); the executor already printed the owner's message and stopped.
        sys.exit(1)


if __name__ == "__main__":
    main()
