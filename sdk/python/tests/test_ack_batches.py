"""The Python SDK's request stream (``Session.requests``): acks queued together go out as one
AckBatch, in order, between the other messages as they were queued; a batch holds at most
``MAX_BATCH_ACKS`` acks and an eighth of the owner's largest message. Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_ack_batches.py
"""

import unittest

from chronolog.gen.chronolog.v1 import executor_pb2
from chronolog.session import MAX_BATCH_ACKS, Outcome, Session


def ack(i: int, error: str = "") -> executor_pb2.SubscribeRequest:
    outcome = Outcome.OUTCOME_ERROR if error else Outcome.OUTCOME_OK
    return executor_pb2.SubscribeRequest(ack=executor_pb2.Ack(delivery_id=f"d{i}", outcome=outcome, error=error))


def heartbeat() -> executor_pb2.SubscribeRequest:
    return executor_pb2.SubscribeRequest(heartbeat=executor_pb2.Heartbeat())


def shape(requests) -> list:
    """Each message as its kind and, for acks, their delivery ids."""
    out = []
    for r in requests:
        kind = r.WhichOneof("message")
        ids = [r.ack.delivery_id] if kind == "ack" else [a.delivery_id for a in r.acks.acks] if kind == "acks" else []
        out.append((kind, ids))
    return out


class AckBatchTest(unittest.TestCase):
    def sent(self, *requests, max_message_bytes: int = 4 * 1024 * 1024) -> list:
        session = Session()
        session.max_message_bytes = max_message_bytes
        for r in requests:
            session.send(r)
        session.close_sends()
        return shape(session.requests())

    def test_acks_queued_together_are_one_batch_in_order_and_other_messages_keep_their_place(self):
        self.assertEqual(
            self.sent(ack(1), ack(2), ack(3, "boom"), heartbeat(), ack(4), heartbeat()),
            [("acks", ["d1", "d2", "d3"]), ("heartbeat", []), ("ack", ["d4"]), ("heartbeat", [])],
        )

    def test_a_batch_holds_at_most_its_count_and_an_eighth_of_the_owners_largest_message(self):
        sent = self.sent(*[ack(i) for i in range(MAX_BATCH_ACKS + 10)])
        self.assertEqual([len(ids) for _, ids in sent], [MAX_BATCH_ACKS, 10])
        self.assertEqual([i for _, ids in sent for i in ids], [f"d{i}" for i in range(MAX_BATCH_ACKS + 10)])
        # 8,000 bytes: 1,000 a batch; each ack with a 400-character error takes about 410.
        sent = self.sent(*[ack(i, "e" * 400) for i in range(5)], max_message_bytes=8_000)
        self.assertEqual([len(ids) for _, ids in sent], [2, 2, 1])

    def test_nothing_is_sent_after_the_stream_is_half_closed(self):
        session = Session()
        session.send(ack(1))
        session.close_sends()
        session.send(ack(2))
        self.assertEqual(shape(session.requests()), [("ack", ["d1"])])


if __name__ == "__main__":
    unittest.main()
