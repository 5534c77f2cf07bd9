// Waiting in the browser tests: every test file polls the page or the relay the same way.

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `fn` every `every` ms until it returns a truthy value (returned) or `ms` pass (throws,
 * naming `what` and the last value or error seen).
 */
export async function until(what, ms, fn, every = 100) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${last})`);
    await sleep(every);
  }
}
