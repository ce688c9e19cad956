"""The Python client's routing across owners when an owner is lost during a call (the connection
dropped, a ping unanswered): a call that may be made twice for once (a read, an Emit naming its
id, a Delay naming its delay id or made under a cause, a batch of such) is made again at the next
owner; any other is the caller's at once. Needs no owner (the owners' channels are stand-ins):

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_owners.py
"""

import unittest

import grpc

from chronolog.gen.chronolog.v1 import event_pb2, log_pb2, time_pb2
from chronolog.owners import FollowingChannel, Owners, repeatable


class _Lost(grpc.RpcError):
    """What grpc raises when the connection drops during a call."""

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "Socket closed"

    def trailing_metadata(self):
        return ()


class _Owner:
    """A stand-in for one owner's channel: its unary calls raise ``_Lost`` when ``lost``, else answer ``url``."""

    def __init__(self, url: str, lost: bool):
        self.url = url
        self.lost = lost
        self.calls = []

    def unary_unary(self, method, request_serializer=None, response_deserializer=None, _registered_method=False):
        def call(request, timeout=None, metadata=None, credentials=None, wait_for_ready=None, compression=None):
            self.calls.append(method)
            if self.lost:
                raise _Lost()
            return self.url

        return call

    def close(self):
        pass


def _owners():
    made = {"a": _Owner("a", lost=True), "b": _Owner("b", lost=False)}
    return made, FollowingChannel(Owners(["a", "b"], lambda url: made[url], failover_timeout_s=5))


EMIT = "/chronolog.v1.LogService/Emit"


class LostOwner(unittest.TestCase):
    def test_emit_naming_its_id_goes_to_the_next_owner(self):
        """Lost at the first owner, an Emit with an id is answered by the second."""
        made, channel = _owners()
        self.assertEqual(channel.unary_unary(EMIT)(log_pb2.EmitRequest(type="t", id="e-1")), "b")
        self.assertEqual((len(made["a"].calls), len(made["b"].calls)), (1, 1))

    def test_emit_without_id_is_the_callers(self):
        """Lost at the first owner, an Emit without an id may have been written: its error is the caller's; the next call goes to the next owner."""
        made, channel = _owners()
        with self.assertRaises(grpc.RpcError):
            channel.unary_unary(EMIT)(log_pb2.EmitRequest(type="t"))
        self.assertEqual(len(made["b"].calls), 0)
        self.assertEqual(channel.unary_unary(EMIT)(log_pb2.EmitRequest(type="t")), "b")

    def test_which_calls_may_be_made_twice(self):
        """Reads, and writes the owner answers a second time from the log."""
        cause = event_pb2.Cause(event_id="c-1")
        self.assertTrue(repeatable("/chronolog.v1.LogService/ReadLog", log_pb2.ReadLogRequest()))
        self.assertTrue(repeatable(EMIT, log_pb2.EmitRequest(type="t", id="e-1")))
        self.assertFalse(repeatable(EMIT, log_pb2.EmitRequest(type="t")))
        batch = "/chronolog.v1.LogService/EmitBatch"
        self.assertTrue(repeatable(batch, log_pb2.EmitBatchRequest(events=[log_pb2.EmitRequest(id="1"), log_pb2.EmitRequest(id="2")])))
        self.assertFalse(repeatable(batch, log_pb2.EmitBatchRequest(events=[log_pb2.EmitRequest(id="1"), log_pb2.EmitRequest()])))
        self.assertFalse(repeatable(batch, log_pb2.EmitBatchRequest()))
        delay = "/chronolog.v1.TimeService/Delay"
        self.assertTrue(repeatable(delay, time_pb2.DelayRequest(delay_id="d-1")))
        self.assertTrue(repeatable(delay, time_pb2.DelayRequest(cause=cause)))
        self.assertFalse(repeatable(delay, time_pb2.DelayRequest(action="a")))
        delays = "/chronolog.v1.TimeService/DelayBatch"
        self.assertTrue(repeatable(delays, time_pb2.DelayBatchRequest(delays=[time_pb2.DelayRequest(delay_id="d-1"), time_pb2.DelayRequest(cause=cause)])))
        self.assertFalse(repeatable(delays, time_pb2.DelayBatchRequest(delays=[time_pb2.DelayRequest(delay_id="d-1"), time_pb2.DelayRequest()])))
        self.assertFalse(repeatable("/chronolog.v1.ActionService/CallAction", object()))


if __name__ == "__main__":
    unittest.main()
