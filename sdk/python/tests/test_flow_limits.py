"""The Python SDK's flow limits in a plugin's manifest: concurrency by key, rate, debounce and
priority of processors and actions, as the owner reads them. Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_flow_limits.py
"""

import unittest

from chronolog import Plugin


class FlowLimits(unittest.TestCase):
    """Processor and action declarations carry their limits into the manifest."""

    def test_processor(self):
        """A dict concurrency is concurrency_limit, a number keeps its meaning; rate, debounce and priority as given."""
        plugin = Plugin("shop")

        @plugin.processor(
            "sync",
            on="customer.changed",
            concurrency={"limit": 3, "key": "data.customer_id", "total": 16, "if_active": "coalesce", "weights": {"gold": 3}},
            rate={"limit": 10, "period_ms": 1000, "key": "data.customer_id", "burst": 5},
            debounce={"key": "data.customer_id", "period_ms": 500, "max_wait_ms": 5000},
            priority="data.priority",
        )
        def sync(ctx):
            pass

        @plugin.processor("lanes", on="order.placed", key="data.order_id", concurrency=8)
        def lanes(ctx):
            pass

        declared = plugin.manifest().processors
        sync_decl = declared["sync"]
        self.assertEqual((sync_decl.concurrency, sync_decl.concurrency_limit.limit, sync_decl.concurrency_limit.total), (0, 3, 16))
        self.assertEqual((sync_decl.concurrency_limit.key, sync_decl.concurrency_limit.if_active), ("data.customer_id", "coalesce"))
        self.assertEqual(dict(sync_decl.concurrency_limit.weights), {"gold": 3})
        self.assertEqual((sync_decl.rate.limit, sync_decl.rate.period_ms, sync_decl.rate.burst), (10, 1000, 5))
        self.assertEqual((sync_decl.debounce.period_ms, sync_decl.debounce.max_wait_ms), (500, 5000))
        self.assertEqual(sync_decl.priority, "data.priority")
        self.assertEqual((declared["lanes"].concurrency, declared["lanes"].HasField("concurrency_limit")), (8, False))

    def test_action(self):
        """An action's concurrency, rate and priority."""
        plugin = Plugin("shop")

        @plugin.action("charge", concurrency={"limit": 1, "key": "input.customer_id", "total": 10}, rate={"limit": 20}, priority="input.priority")
        def charge(ctx, data):
            return {}

        decl = plugin.manifest().actions["charge"]
        self.assertEqual((decl.concurrency_limit.limit, decl.concurrency_limit.key, decl.concurrency_limit.total), (1, "input.customer_id", 10))
        self.assertEqual((decl.rate.limit, decl.priority), (20, "input.priority"))


if __name__ == "__main__":
    unittest.main()
