"""The Python SDK's request stream (``Session.requests``): acks queued together go out as one
AckBatch, in order, between the other messages as they were queued; a batch holds at most
``MAX_BATCH_ACKS`` acks and an eighth of the owner's largest message. Action results queued
together go out as one ActionResultBatch the same way, to an owner that accepts them, within half
of its largest message; to an older owner each goes alone. Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_ack_batches.py
"""

import unittest

from chronolog.gen.chronolog.v1 import executor_pb2
from chronolog.session import MAX_BATCH_ACKS, MAX_BATCH_RESULTS, Outcome, Session


def ack(i: int, error: str = "") -> executor_pb2.SubscribeRequest:
    outcome = Outcome.OUTCOME_ERROR if error else Outcome.OUTCOME_OK
    return executor_pb2.SubscribeRequest(ack=executor_pb2.Ack(delivery_id=f"d{i}", outcome=outcome, error=error))


def result(i: int, error: str = "") -> executor_pb2.SubscribeRequest:
    outcome = Outcome.OUTCOME_ERROR if error else Outcome.OUTCOME_OK
    return executor_pb2.SubscribeRequest(action_result=executor_pb2.ActionResult(invocation_id=f"i{i}", outcome=outcome, error=error))


def heartbeat() -> executor_pb2.SubscribeRequest:
    return executor_pb2.SubscribeRequest(heartbeat=executor_pb2.Heartbeat())


def shape(requests) -> list:
    """Each message as its kind and, for acks, their delivery ids."""
    out = []
    for r in requests:
        kind = r.WhichOneof("message")
        ids = (
            [r.ack.delivery_id]
            if kind == "ack"
            else [a.delivery_id for a in r.acks.acks]
            if kind == "acks"
            else [r.action_result.invocation_id]
            if kind == "action_result"
            else [a.invocation_id for a in r.action_results.results]
            if kind == "action_results"
            else []
        )
        out.append((kind, ids))
    return out


class AckBatchTest(unittest.TestCase):
    def sent(self, *requests, max_message_bytes: int = 4 * 1024 * 1024, result_batches: bool = True) -> list:
        session = Session()
        session.max_message_bytes = max_message_bytes
        session.action_result_batches = result_batches
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

    def test_results_queued_together_are_one_batch_in_order_beside_acks_and_other_messages(self):
        self.assertEqual(
            self.sent(result(1), result(2), ack(1), ack(2), result(3), heartbeat(), result(4), result(5)),
            [("action_results", ["i1", "i2"]), ("acks", ["d1", "d2"]), ("action_result", ["i3"]), ("heartbeat", []), ("action_results", ["i4", "i5"])],
        )

    def test_a_result_batch_holds_at_most_its_count_and_half_of_the_owners_largest_message(self):
        sent = self.sent(*[result(i) for i in range(MAX_BATCH_RESULTS + 3)])
        self.assertEqual([len(ids) for _, ids in sent], [MAX_BATCH_RESULTS, 3])
        # 8,000 bytes: 4,000 a batch; each result with a 1,500-character error takes about 1,510; one of 5,000 goes alone.
        sent = self.sent(result(1, "1" * 1500), result(2, "2" * 1500), result(3, "3" * 1500), result(4, "4" * 5000), result(5), max_message_bytes=8_000)
        self.assertEqual(sent, [("action_results", ["i1", "i2"]), ("action_result", ["i3"]), ("action_result", ["i4"]), ("action_result", ["i5"])])

    def test_an_owner_that_does_not_accept_result_batches_gets_each_result_alone(self):
        self.assertEqual(self.sent(result(1), result(2), result_batches=False), [("action_result", ["i1"]), ("action_result", ["i2"])])

    def test_nothing_is_sent_after_the_stream_is_half_closed(self):
        session = Session()
        session.send(ack(1))
        session.close_sends()
        session.send(ack(2))
        self.assertEqual(shape(session.requests()), [("ack", ["d1"])])


if __name__ == "__main__":
    unittest.main()
