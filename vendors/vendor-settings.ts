// What each OA vendor's settings.ts hands the configuration (vendors/settings.ts): its variables,
// the ones that together turn its connector on, its part of the configuration, and how its events
// arrive — so that adding a vendor is one entry there.
import type { z } from 'zod';

export interface VendorSettings<Shape extends z.ZodRawShape, Config> {
  /** Its environment variables, with their schemas. */
  settings: Shape;
  /** Present together, they turn the connector on; some without the others is a ConfigError. */
  required: readonly (keyof Shape & string)[];
  /** Its configuration, or undefined when it is off; `on` says whether `required` are all there. */
  from: (env: z.output<z.ZodObject<Shape>>, problems: string[], on: () => boolean) => Config | undefined;
  /** How its events arrive (its callback, a connection it opens), for the start-up log. */
  events: (config: Config) => string[];
}
