// The HTTP API against its own OpenAPI document, fuzzed by schemathesis within `npm test`: a short
// run with a fixed seed, so the suite repeats itself (`npm run fuzz` draws new inputs, longer).
import { describeOpenApiFuzz } from '../../tools/harness/openapi-fuzz.js';

describeOpenApiFuzz('the HTTP API under schemathesis (short, fixed seed)', {
  maxExamples: 5,
  maxSeconds: 90,
  seed: 20261201,
});
