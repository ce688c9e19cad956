"""The Python client gets the same clear errors as grpc-js:
the standard code, the owner's message naming the problem, the ErrorInfo
reason and the BadRequest field paths, and nothing is written.

Run against an owner that has the pyshop plugin (examples/python/executor.py
registers it) and a config with an admin, a client and an executor principal:

    CHRONOLOG_URL=... CHRONOLOG_ADMIN_TOKEN=... CHRONOLOG_CLIENT_TOKEN=... \\
    CHRONOLOG_EXECUTOR_TOKEN=... PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_client_errors.py

test/python-executor.test.ts runs it that way.
"""

import os
import time
import unittest

import grpc

from chronolog import ChronologError, Client, Executor, Plugin, connect
from chronolog.gen.chronolog.v1 import event_pb2, executor_pb2, executor_pb2_grpc, plugin_pb2

URL = os.environ.get("CHRONOLOG_URL", "http://127.0.0.1:50051")
ADMIN = os.environ.get("CHRONOLOG_ADMIN_TOKEN", "")
CLIENT = os.environ.get("CHRONOLOG_CLIENT_TOKEN", "")
EXECUTOR = os.environ.get("CHRONOLOG_EXECUTOR_TOKEN", "")


class ClientErrors(unittest.TestCase):
    """Each bad request fails with the right code and message and writes nothing."""

    @classmethod
    def setUpClass(cls):
        """Opens an admin client (to read the whole log) and a client principal's client."""
        cls.admin = Client(URL, ADMIN)
        cls.client = Client(URL, CLIENT)

    @classmethod
    def tearDownClass(cls):
        """Closes the clients."""
        cls.admin.close()
        cls.client.close()

    def setUp(self):
        """Remembers the log's head."""
        self.head = self.admin.head()

    def tearDown(self):
        """Nothing was written by the failed request."""
        self.assertEqual(self.admin.head(), self.head, "a refused request wrote to the log")

    def refused(self, code, fn, *args, **kwargs) -> ChronologError:
        """Calls fn, expecting a ChronologError with ``code``; returns it."""
        with self.assertRaises(ChronologError) as caught:
            fn(*args, **kwargs)
        error = caught.exception
        self.assertEqual(error.code(), code, error.details())
        self.assertIsInstance(error, grpc.RpcError)
        return error

    def test_undeclared_type_is_invalid_argument_naming_the_type(self):
        """An undeclared type: INVALID_ARGUMENT, the message grpc-js shows, reason and field."""
        error = self.refused(grpc.StatusCode.INVALID_ARGUMENT, self.client.emit, "nobody.declared", {})
        self.assertEqual(error.details(), 'event type "nobody.declared" is not declared by any plugin')
        self.assertEqual(error.reason, "UNDECLARED_EVENT_TYPE")
        self.assertEqual([v.field for v in error.field_violations], ["type"])
        self.assertEqual(str(error), 'INVALID_ARGUMENT: event type "nobody.declared" is not declared by any plugin')

    def test_schema_violation_names_json_pointers_and_rules(self):
        """Data failing its schema: INVALID_ARGUMENT with one violation per problem (path and rule)."""
        bad = {"cart_id": "", "items": [{"sku": "tea", "price": -1, "qty": 0}]}
        error = self.refused(grpc.StatusCode.INVALID_ARGUMENT, self.client.emit, "cart.submitted", bad)
        self.assertEqual(error.reason, "SCHEMA_VIOLATION")
        self.assertIn("data of cart.submitted does not match its schema", error.details())
        fields = {v.field: v.description for v in error.field_violations}
        self.assertIn("data/cart_id", fields)
        self.assertIn("minimum", fields["data/items/0/price"])
        self.assertIn("data/items/0/qty", fields)

    def test_a_type_without_allow_is_permission_denied_from_outside(self):
        """cart.checked has no allow: only code under a cause may emit it."""
        error = self.refused(grpc.StatusCode.PERMISSION_DENIED, self.client.emit, "cart.checked", {"cart_id": "x", "total": 1, "items": 1})
        self.assertIn("only code under a cause may emit it", error.details())
        self.assertIn("cart.checked", error.details())

    def test_a_client_may_not_work_under_a_cause(self):
        """Only executors act under a cause."""
        cause = event_pb2.Cause(event_id="any", position=0)
        error = self.refused(grpc.StatusCode.PERMISSION_DENIED, self.client.emit, "cart.checked", {"cart_id": "x", "total": 1, "items": 1}, cause=cause)
        self.assertIn("only executors act under a cause", error.details())

    def test_missing_or_wrong_token_is_unauthenticated(self):
        """No token, or one the owner does not know: UNAUTHENTICATED."""
        with Client(URL) as anonymous:
            error = self.refused(grpc.StatusCode.UNAUTHENTICATED, anonymous.emit, "cart.submitted", {"cart_id": "c", "items": []})
            self.assertIn("missing bearer token", error.details())
        with Client(URL, "not-a-token-0123456789") as wrong:
            error = self.refused(grpc.StatusCode.UNAUTHENTICATED, wrong.emit, "cart.submitted", {"cart_id": "c", "items": []})
            self.assertIn("unknown bearer token", error.details())

    def test_unknown_event_is_not_found(self):
        """GetEvent of an unknown id: NOT_FOUND naming it."""
        error = self.refused(grpc.StatusCode.NOT_FOUND, self.client.get_event, "no-such-event")
        self.assertIn("no-such-event", error.details())

    def test_oversized_request_is_resource_exhausted(self):
        """A request over the owner's message limit (4 MiB by default): RESOURCE_EXHAUSTED."""
        self.refused(grpc.StatusCode.RESOURCE_EXHAUSTED, self.client.emit, "cart.submitted", {"cart_id": "x" * (5 * 1024 * 1024), "items": []})

    def test_action_input_violating_its_schema_is_invalid_argument(self):
        """CallAction with input failing the action's input schema: INVALID_ARGUMENT at input/..."""
        error = self.refused(grpc.StatusCode.INVALID_ARGUMENT, self.client.call, "pyshop.total", {"items": "none"})
        self.assertIn("input/items", [v.field for v in error.field_violations])

    def test_unknown_action_is_refused(self):
        """Calling an action nobody declared fails naming it."""
        error = self.refused(grpc.StatusCode.NOT_FOUND, self.client.call, "pyshop.nope", {})
        self.assertIn("pyshop.nope", error.details())

    def test_delay_id_with_a_slash_is_invalid_argument(self):
        """Client.delay(..., delay_id=...) reaches the owner: a delay_id with "/" is INVALID_ARGUMENT at delay_id."""
        error = self.refused(grpc.StatusCode.INVALID_ARGUMENT, self.admin.delay, "pyshop.total", {"items": []}, {"interval_ms": 60_000}, "unbounded", delay_id="a/b")
        self.assertEqual([v.field for v in error.field_violations], ["delay_id"])
        self.assertIn('may not contain "/"', error.details())

    def assert_refused_for_good(self, token, code, message, plugin=None):
        """An executor with ``token`` (and ``plugin``) is refused with ``code``: it reports once, stops at once and raises the owner's error."""
        errors = []
        executor = Executor([plugin or Plugin("pyshop-refused")], URL, token, on_error=errors.append, max_backoff_s=0.2).start()
        try:
            started = time.monotonic()
            with self.assertRaises(ChronologError) as caught:
                executor.wait_ready(10)
            self.assertLess(time.monotonic() - started, 5, "wait_ready waited instead of failing fast")
            self.assertEqual(caught.exception.code(), code)
            self.assertEqual(caught.exception.details(), message)
            self.assertIs(executor.fatal_error, caught.exception)
            # Stopped: the loop ended and it does not try again (backoff would retry every 0.2 s).
            executor._thread.join(2)
            self.assertFalse(executor._thread.is_alive(), "the connection loop still runs")
            time.sleep(1)
            self.assertEqual([(e.code(), e.details()) for e in errors], [(code, message)])
            with self.assertRaises(ChronologError) as again:
                executor.run_forever()
            self.assertIs(again.exception, caught.exception)
        finally:
            executor.stop(0)

    def test_subscribe_needs_the_executor_role(self):
        """A client principal's executor is refused with PERMISSION_DENIED and stops instead of retrying."""
        self.assert_refused_for_good(CLIENT, grpc.StatusCode.PERMISSION_DENIED, "principal web (role client) may not subscribe as an executor; the executor role is needed")

    def test_executor_with_an_unknown_token_stops(self):
        """An unknown token: UNAUTHENTICATED, reported once, no reconnects."""
        self.assert_refused_for_good("not-a-token-0123456789", grpc.StatusCode.UNAUTHENTICATED, "unknown bearer token")

    def test_executor_without_a_token_stops(self):
        """No token at all: UNAUTHENTICATED, reported once, no reconnects."""
        self.assert_refused_for_good(None, grpc.StatusCode.UNAUTHENTICATED, "missing bearer token: send the header `authorization: Bearer <token>`")

    def test_executor_whose_hello_is_rejected_stops(self):
        """A plugin whose manifest does not register (a bad ``where``): INVALID_ARGUMENT at hello, reported once, no reconnects; nothing registered."""
        bad = Plugin("pybadwhere", events={"pybadwhere.ping": {"allow": ["*"]}})

        @bad.processor("track", on="pybadwhere.ping", where={"$bogus": 1})
        def track(ctx):
            pass

        message = "invalid plugin manifest pybadwhere: processors.track.where: unknown top level operator: $bogus"
        self.assert_refused_for_good(EXECUTOR, grpc.StatusCode.INVALID_ARGUMENT, message, plugin=bad)
        self.assertNotIn("pybadwhere", [p.manifest.name for p in self.admin.plugins.ListPlugins(plugin_pb2.ListPluginsRequest()).plugins])

    def test_hello_naming_an_undeclared_processor_is_invalid_argument(self):
        """A hello that names a processor no plugin declares: the stream fails with INVALID_ARGUMENT."""
        channel = connect(URL, EXECUTOR)
        try:
            stub = executor_pb2_grpc.ExecutorServiceStub(channel)
            hello = executor_pb2.SubscribeRequest(hello=executor_pb2.Hello(executor="pyshop-bad", processors=["pyshop.nope"]))
            with self.assertRaises(grpc.RpcError) as caught:
                for _ in stub.Subscribe(iter([hello]), timeout=10):
                    pass
            self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn('unknown processor "pyshop.nope"', caught.exception.details())
        finally:
            channel.close()


if __name__ == "__main__":
    unittest.main()
