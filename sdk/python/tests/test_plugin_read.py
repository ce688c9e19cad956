"""The Python SDK's ``read`` lists: who besides admins and the plugin's executors may read a
processor's and an action's events, and an event type's, end up in the manifest an executor
registers (and nothing when not given). Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_plugin_read.py
"""

import unittest

from chronolog import Plugin


class PluginRead(unittest.TestCase):
    """``read=`` on processors and actions, ``"read"`` on event types."""

    def test_read_lists_in_the_manifest(self):
        """Given: in the manifest as given; not given: empty lists."""
        shop = Plugin("shop", events={"order.audited": {"read": ["auditor"]}, "order.placed": {"allow": ["*"]}})

        @shop.processor("fulfil", on="order.placed", read=["role:client"])
        def fulfil(ctx):
            pass

        @shop.processor("quiet", on="order.placed")
        def quiet(ctx):
            pass

        @shop.action("charge", allow=["*"], read=["auditor", "ops"])
        def charge(ctx, input):
            return {}

        @shop.action("refund")
        def refund(ctx, input):
            return {}

        manifest = shop.manifest()
        self.assertEqual(list(manifest.events["order.audited"].read), ["auditor"])
        self.assertEqual(list(manifest.events["order.placed"].read), [])
        self.assertEqual(list(manifest.processors["fulfil"].read), ["role:client"])
        self.assertEqual(list(manifest.processors["quiet"].read), [])
        self.assertEqual(list(manifest.actions["charge"].read), ["auditor", "ops"])
        self.assertEqual(list(manifest.actions["refund"].read), [])


if __name__ == "__main__":
    unittest.main()
