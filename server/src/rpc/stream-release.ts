import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/** Counts server streams by method (`chronolog_streams_open`). */
export interface StreamGauge {
  inc(labels: { method: string }): void;
  dec(labels: { method: string }): void;
}

/**
 * Server streams end when their call does. Once the call's signal aborts (the client
 * cancelled, its connection or process went, its deadline passed, the owner is stopping), the
 * handler's stream is ended at once, whatever the handler or the transport waits for: a write
 * the peer will never read, a wait no abort wakes. Its generator is returned, so its `finally`
 * blocks release what it holds, and the stream ends with the abort's reason (CANCELLED,
 * DEADLINE_EXCEEDED, or UNAVAILABLE while the owner stops). `open` counts streams from their
 * start until they are released.
 */
export function streamReleaseInterceptor(open?: StreamGauge): Interceptor {
  return (next) => async (req) => {
    const res = await next(req);
    if (!res.stream) return res;
    const labels = { method: `${req.service.typeName}/${req.method.name}` };
    open?.inc(labels);
    return { ...res, message: releasedOnAbort(res.message, req.signal, () => open?.dec(labels)) };
  };
}

/** The error a stream ends with once `signal` aborted: its reason when a ConnectError, else CANCELLED. */
function abortError(signal: AbortSignal): ConnectError {
  return signal.reason instanceof ConnectError ? signal.reason : new ConnectError("the call was cancelled", Code.Canceled);
}

/**
 * `messages` as an iterable that ends (with {@link abortError}) as soon as `signal` aborts,
 * returning the handler's iterator then, also while nobody is reading it; `onRelease` runs once,
 * when the stream ends in any way.
 */
function releasedOnAbort<T>(messages: AsyncIterable<T>, signal: AbortSignal, onRelease: () => void): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const inner = messages[Symbol.asyncIterator]();
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        signal.removeEventListener("abort", release);
        onRelease();
        // Runs the handler's `finally` now when it waits at a `yield`; when it is running, the
        // return is queued behind it, and the aborted signal wakes what it waits for.
        inner.return?.().catch(() => {});
      };
      if (signal.aborted) release();
      else signal.addEventListener("abort", release);
      return {
        next: () =>
          new Promise<IteratorResult<T>>((resolve, reject) => {
            if (released) return signal.aborted ? reject(abortError(signal)) : resolve({ done: true, value: undefined });
            const onAbort = (): void => reject(abortError(signal));
            signal.addEventListener("abort", onAbort, { once: true });
            inner.next().then(
              (result) => {
                signal.removeEventListener("abort", onAbort);
                if (result.done) release();
                resolve(result);
              },
              (e: unknown) => {
                signal.removeEventListener("abort", onAbort);
                release();
                reject(e);
              },
            );
          }),
        return: (value?: unknown) => {
          release();
          return Promise.resolve({ done: true, value: value as T });
        },
        throw: (e?: unknown) => {
          release();
          return Promise.reject(e);
        },
      };
    },
  };
}
