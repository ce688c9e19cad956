/**
 * Resolves once `predicate` holds, checking every 20 ms; rejects naming
 * `what` after `timeoutMs` (default 10 s). Tests wait on observable state,
 * never on fixed sleeps.
 */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
