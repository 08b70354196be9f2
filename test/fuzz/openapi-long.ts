// `npm run fuzz`: the OpenAPI fuzzing of test/integration/openapi-fuzz.test.ts, by hand, with more
// examples and a new seed each run.
import { describeOpenApiFuzz } from '../../tools/harness/openapi-fuzz.js';

describeOpenApiFuzz('the HTTP API under schemathesis (long, new seed)', {
  maxExamples: 100,
  maxSeconds: 480,
});
