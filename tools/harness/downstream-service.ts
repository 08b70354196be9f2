// A test service whose order events go to a scripted downstream (tools/harness/scripted-downstream.ts)
// in whose consumer tables of its own the effects land, on the test run's PostgreSQL.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startScriptedDownstream, type ScriptedDownstream } from './scripted-downstream.js';
import { stackEnv, startTestService, testConfig, type TestService } from './service.js';

export interface DownstreamService {
  service: TestService;
  downstream: ScriptedDownstream;
  stop(): Promise<void>;
}

/**
 * `receiverSecret` is the one secret the downstream's consumer holds; `settings` are the service's,
 * given the downstream's URL (DOWNSTREAM_SECRET among them).
 */
export async function startDownstreamService(
  receiverSecret: string,
  settings: (downstreamUrl: string) => Record<string, string>,
): Promise<DownstreamService> {
  const pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
  const downstream = await startScriptedDownstream(pool, receiverSecret, `consumer_${randomBytes(3).toString('hex')}`);
  const service = await startTestService({ config: testConfig(settings(downstream.url)) });
  return {
    service,
    downstream,
    stop: async () => {
      await service.stop();
      await downstream.close();
      await pool.end();
    },
  };
}
