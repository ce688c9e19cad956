/**
 * Watches this process's event loop: a timer every `periodMs` held back more than `overMs` is a
 * stall (in a process otherwise idle, the machine not running it; in a busy one, its own long
 * turns). `stop()` ends the watch and returns the stalls as [Date.now(), ms late].
 */
export function stallProbe(periodMs: number, overMs: number): { stop(): [number, number][] } {
  const stalls: [number, number][] = [];
  let expected = performance.now() + periodMs;
  const timer = setInterval(() => {
    const lateMs = performance.now() - expected;
    if (lateMs > overMs) stalls.push([Date.now(), Math.round(lateMs)]);
    expected = performance.now() + periodMs;
  }, periodMs);
  return { stop: () => (clearInterval(timer), stalls) };
}
