// The consumer's PostgreSQL ledger when the server ends a connection the moment it is made (a
// server shutting down can send a new connection's "ready" and its FATAL in one TCP read): the
// event fails and goes back to the queue, and the process goes on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { classifyError } from '../../../../domain/error-classification.js';
import { ledgerStatements, openLedgerPool } from '../../../../examples/consumer/ledger-stores.js';
import {
  type PostgresThatEndsConnections,
  startPostgresThatEndsConnections,
} from '../../../../tools/harness/postgres-that-ends-connections.js';

describe("the consumer's PostgreSQL ledger", () => {
  let server: PostgresThatEndsConnections;
  before(async () => {
    server = await startPostgresThatEndsConnections();
  });
  after(() => server.close());

  it('fails the event whose new connection the server ends at once, and the process goes on', async () => {
    const database = openLedgerPool(server.url, 2);
    // As the consumer's process does: an idle connection lost is logged, not thrown.
    if (database.store === 'postgresql') database.pool.on('error', () => undefined);
    const ledger = ledgerStatements(database);
    const effect = {
      idempotencyKey: 'APPROVAL:A1:MAIN',
      eventId: 'event-1',
      orderNo: 'SO-20261207-00000001',
      customerId: 'CUST-1',
      lines: [],
      totalAmount: '1.0000',
    };
    // Unheard, the FATAL is an unhandled 'error' event: it ends the process, and fails this test,
    // before the rejection is seen.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      await assert.rejects(ledger.claimAndApply('consumer', effect), (error: Error) => {
        // A lost connection: the event goes back to the queue after a pause, not to the dead letters.
        assert.equal(classifyError(error).errorClass, 'ConnectionLost', error.message);
        return true;
      });
    }
    assert.equal(server.ended(), 2, 'each event asked for a connection of its own');
    await ledger.end();
  });
});
