"""The executor's worker threads: each delivery or invocation runs on a thread of its own, at most
``max_threads`` at once, as ``concurrent.futures.ThreadPoolExecutor`` would run them, without a
future, a work item and a done callback per run (on a drain of small deliveries those cost as
much as the handler's own work).
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Optional, Tuple

__all__ = ["WorkerPool"]

_Work = Optional[Tuple[Callable[..., None], Tuple[Any, ...]]]


class WorkerPool:
    """Threads started as work needs them (up to ``max_threads``) and kept, taking work in the order given."""

    def __init__(self, max_threads: int, name: str) -> None:
        self._max = max(1, max_threads)
        self._name = name
        self._queue: "queue.SimpleQueue[_Work]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._threads = 0
        self._unfinished = 0  # given and not yet finished: queued or running
        self._closed = False

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        """Runs ``fn(*args)`` on a worker thread; nothing once the pool is shut down. ``fn`` reports its own errors."""
        with self._lock:
            if self._closed:
                return
            self._unfinished += 1
            start = self._unfinished > self._threads and self._threads < self._max
            if start:
                self._threads += 1
        self._queue.put((fn, args))
        if start:
            threading.Thread(target=self._work, name=f"{self._name}-{self._threads}", daemon=True).start()

    def wait_idle(self, timeout: float) -> bool:
        """Waits until nothing given is queued or running (up to ``timeout`` s); True when so."""
        with self._lock:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout)

    def shutdown(self) -> None:
        """Runs nothing more: work still queued is dropped; running work finishes on its thread."""
        with self._lock:
            self._closed = True
            threads = self._threads
        for _ in range(threads):
            self._queue.put(None)

    def _work(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            fn, args = work
            try:
                if not self._closed:
                    fn(*args)
            except BaseException:  # noqa: BLE001 - the work reports its own errors; a thread of the pool never dies of one
                pass
            finally:
                with self._lock:
                    self._unfinished -= 1
                    if self._unfinished == 0:
                        self._idle.notify_all()
