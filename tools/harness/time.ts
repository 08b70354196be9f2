// The one plain pause the tools and tests share (pacing, polling, a fault's duration), and the one
// bounded wait.
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether `promise` settles within `ms`. The timer is cleared as soon as it does: a bare
 * `Promise.race` with a sleep leaves the sleep holding the test file's process open to its end.
 */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
