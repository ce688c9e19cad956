/** How long one window of the fastest-transit minimum lasts (ms): the estimate follows clock drift and path changes within two windows. */
const windowMs = 5_000;

/**
 * Maps the owner's stream clock (`Invocation.written_at_ms`: ms since the stream
 * opened, monotonic) onto this process's `performance.now()`, so a held
 * invocation's hold counts from when the owner wrote it rather than from its
 * receipt. Keeps the least offset (receipt − written_at_ms) seen in the
 * last one to two windows: the stream's fastest transit plus the clocks' origin
 * difference. One per stream (the owner's clock restarts with each stream).
 */
export class StreamClock {
  private best = Infinity;
  private previous = Infinity;
  private windowEnds = -Infinity;

  /**
   * The local time (`performance.now()` ms) at which a message written at
   * `writtenAtMs` would have arrived with the fastest transit seen: never after
   * `receivedAtMs`. `receivedAtMs` itself when `writtenAtMs` is 0 (not set).
   */
  writtenAt(writtenAtMs: number, receivedAtMs: number): number {
    if (writtenAtMs <= 0) return receivedAtMs;
    if (receivedAtMs >= this.windowEnds) {
      this.previous = receivedAtMs < this.windowEnds + windowMs ? this.best : Infinity; // after a quiet spell, older transits no longer count
      this.best = Infinity;
      this.windowEnds = receivedAtMs + windowMs;
    }
    this.best = Math.min(this.best, receivedAtMs - writtenAtMs);
    return writtenAtMs + Math.min(this.best, this.previous);
  }
}
