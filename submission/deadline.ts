// Races a piece of work against a deadline: the work's outcome if it settles first, otherwise what
// the caller said a late one means — an error, or a value to answer with — and the timer is cleared
// either way. The work itself is not stopped; it goes on after the deadline.

/** What the race yields when the deadline comes first: an error made then, or a value. */
export type Late<L> = { reject: () => Error } | { resolve: L };

/**
 * `work`'s outcome (its value, or its failure), or the `late` outcome at `by` (epoch ms; a time
 * already past means at once). A failure of the work after the deadline is not reported here: the
 * race has already answered, and whoever still holds `work` hears it.
 */
export async function raceDeadline<T, L = never>(work: Promise<T>, by: number, late: Late<L>): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<L>((resolve, reject) => {
    timer = setTimeout(
      () => ('reject' in late ? reject(late.reject()) : resolve(late.resolve)),
      Math.max(0, by - Date.now()),
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
