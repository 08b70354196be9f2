// The service's PostgreSQL client when the server ends a connection the moment it is made (a
// server shutting down can send a new connection's "ready" and its FATAL in one TCP read): the
// transaction that asked for it fails with a retryable error, and the process goes on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { classifyError } from '../../../../domain/error-classification.js';
import { createPrismaClient } from '../../../../services/db/prisma-client.js';
import {
  type PostgresThatEndsConnections,
  startPostgresThatEndsConnections,
} from '../../../../tools/harness/postgres-that-ends-connections.js';

describe("the service's PostgreSQL client", () => {
  let server: PostgresThatEndsConnections;
  before(async () => {
    server = await startPostgresThatEndsConnections();
  });
  after(() => server.close());

  it('fails the transaction whose new connection the server ends at once, and the process goes on', async () => {
    const prisma = createPrismaClient({ databaseUrl: server.url, poolSize: 2, statementTimeoutMs: 2_000 });
    try {
      // Unheard, the FATAL is an unhandled 'error' event: it ends the process, and fails this test,
      // before the rejection is seen.
      for (let attempt = 0; attempt < 2; attempt += 1) {
        await assert.rejects(
          prisma.$transaction((tx) => tx.$queryRaw`SELECT 1`),
          (error: Error) => {
            // What decides that the write is tried again.
            assert.deepEqual(
              [classifyError(error).errorClass, classifyError(error).retryable],
              ['ConnectionLost', true],
            );
            return true;
          },
        );
      }
      assert.ok(server.ended() >= 2, `each transaction asked for a connection (${server.ended()})`);
    } finally {
      await prisma.$disconnect();
    }
  });
});
