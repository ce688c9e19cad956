import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SubscribeRequestSchema } from "./gen/chronolog/v1/executor_pb.js";

/** A message of the executor's stream, as queued. */
type Request = MessageInitShape<typeof SubscribeRequestSchema>;

/**
 * A push-fed async iterable of requests: ends at once when `signal` aborts, or after what is
 * queued when `end()` is called (a half-close; later pushes are dropped).
 */
export function requestQueue(signal: AbortSignal): { push: (r: Request) => void; end: () => void; iterable: AsyncIterable<Request> } {
  const items: Request[] = [];
  let ended = false;
  let wake: (() => void) | null = null;
  signal.addEventListener("abort", () => wake?.(), { once: true });
  return {
    push(r) {
      if (ended) return;
      items.push(r);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    iterable: {
      async *[Symbol.asyncIterator]() {
        while (!signal.aborted) {
          while (items.length > 0) yield items.shift()!;
          if (ended) return;
          await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
        }
      },
    },
  };
}
