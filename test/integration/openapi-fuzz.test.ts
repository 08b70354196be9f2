// The HTTP API against its own OpenAPI document, fuzzed by schemathesis within `npm test`: a short
// run with a fixed seed, bounded by its examples per operation and not by the clock, so the suite
// repeats itself whatever the machine's speed (`npm run fuzz` draws new inputs for minutes).
import { describeOpenApiFuzz } from '../../tools/harness/openapi-fuzz.js';

describeOpenApiFuzz('the HTTP API under schemathesis (short, fixed seed)', {
  maxExamples: 50,
  seed: 20261201,
});
