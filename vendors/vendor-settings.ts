// What each OA vendor's settings.ts hands the configuration (vendors/settings.ts composes them, vendor
// by vendor, from vendors/registry.ts): its variables, the ones that together turn its connector on,
// those production guards (its secrets and its open API's address: services/config/production-refusals.ts),
// its part of the configuration, and how its events arrive — so that nothing outside its folder names them.
import type { z } from 'zod';

export interface VendorSettings<Shape extends z.ZodRawShape, Config> {
  /** Its environment variables, with their schemas, each named with the vendor's id as prefix. */
  readonly env: Shape;
  /** Present together, they turn the connector on; some without the others is a ConfigError. */
  readonly required: readonly (keyof Shape & string)[];
  /**
   * The variables that hold a secret as they are: production refuses the examples' placeholders in
   * them, and every process that runs the vendor reads them from its own Secret (app/process-secrets.ts).
   */
  readonly secrets: readonly (keyof Shape & string)[];
  /** The addresses of its open API: production takes https:// only, as the app secret goes out over them. */
  readonly apiUrls: readonly (keyof Shape & string)[];
  /** Its configuration, or undefined when it is off; `on` says whether `required` are all there. */
  from(env: z.output<z.ZodObject<Shape>>, problems: string[], on: () => boolean): Config | undefined;
  /** How its events arrive (its callback, a connection it opens), for the start-up log. */
  events(config: Config): string[];
}

/** The entries of a comma-separated list setting: trimmed, the empty ones dropped, each kept once. */
export function listEntries(text: string | undefined): string[] {
  return [
    ...new Set(
      (text ?? '')
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry.length > 0),
    ),
  ];
}

/**
 * A problem for each of `entries` (of the setting `name`) that is not of `form`, named by its
 * position: a value put in the wrong variable is not repeated into the log.
 */
export function entriesNotOfForm(
  name: string,
  entries: readonly string[],
  form: { pattern: RegExp; says: string },
  problems: string[],
): void {
  entries.forEach((entry, index) => {
    if (!form.pattern.test(entry)) problems.push(`${name}: entry ${index + 1} is not ${form.says}`);
  });
}
