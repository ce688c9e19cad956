"""The executor's worker threads (``WorkerPool``): each piece of work on a thread of its own, at most
``max_threads`` at once, the rest queued; ``wait_idle`` waits for what was given (work given
meanwhile included); after ``shutdown`` queued work is dropped and nothing new runs. Needs no owner:

    PYTHONPATH=sdk/python .venv/bin/python -m unittest -v sdk/python/tests/test_worker_pool.py
"""

import threading
import unittest

from chronolog.worker_pool import WorkerPool


class WorkerPoolTest(unittest.TestCase):
    def test_runs_work_concurrently_up_to_its_threads_and_the_rest_on_them_once_free(self) -> None:
        pool = WorkerPool(3, "test")
        release = threading.Event()
        lock = threading.Lock()
        started: list = []
        threads: set = set()

        def work(i: int) -> None:
            with lock:
                started.append(i)
                threads.add(threading.get_ident())
            release.wait(5)

        for i in range(5):
            pool.submit(work, i)
        pause = threading.Event()
        for _ in range(500):
            if len(started) >= 3:
                break
            pause.wait(0.01)
        pause.wait(0.1)  # had a fourth thread started, it would have taken work by now
        self.assertEqual(sorted(started), [0, 1, 2])
        release.set()
        self.assertTrue(pool.wait_idle(5))
        self.assertEqual(sorted(started[3:]), [3, 4])
        self.assertEqual(len(threads), 3)
        pool.shutdown()

    def test_wait_idle_waits_for_work_given_while_it_waits(self) -> None:
        pool = WorkerPool(4, "test")
        done: list = []

        def chain(n: int) -> None:
            if n > 0:
                pool.submit(chain, n - 1)
            done.append(n)

        pool.submit(chain, 20)
        self.assertTrue(pool.wait_idle(5))
        self.assertEqual(sorted(done), list(range(21)))
        pool.shutdown()

    def test_wait_idle_says_false_when_work_outlasts_the_timeout(self) -> None:
        pool = WorkerPool(1, "test")
        release = threading.Event()
        pool.submit(release.wait, 5)
        self.assertFalse(pool.wait_idle(0.05))
        release.set()
        self.assertTrue(pool.wait_idle(5))
        pool.shutdown()

    def test_a_failing_piece_of_work_does_not_stop_its_thread(self) -> None:
        pool = WorkerPool(1, "test")
        done: list = []

        def fail() -> None:
            raise RuntimeError("handler bug")

        pool.submit(fail)
        pool.submit(done.append, "after")
        self.assertTrue(pool.wait_idle(5))
        self.assertEqual(done, ["after"])
        pool.shutdown()

    def test_after_shutdown_queued_work_is_dropped_and_new_work_not_taken(self) -> None:
        pool = WorkerPool(1, "test")
        release = threading.Event()
        done: list = []
        pool.submit(lambda: (release.wait(5), done.append("running")))
        pool.submit(done.append, "queued")
        pool.shutdown()
        pool.submit(done.append, "after shutdown")
        release.set()
        self.assertTrue(pool.wait_idle(5))
        self.assertEqual(done, ["running"])


if __name__ == "__main__":
    unittest.main()
