import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as bundled from '../../workflows/index.js';
import { VERSIONING_BEHAVIOURS } from '../../workflows/versioning-behaviours.js';

/** What setWorkflowOptions attached to a workflow function. */
function declaredBehaviour(workflow: unknown): unknown {
  return (workflow as { workflowDefinitionOptions?: { versioningBehavior?: unknown } }).workflowDefinitionOptions
    ?.versioningBehavior;
}

describe('versioning behaviour of each workflow type', () => {
  it('every workflow type the bundle exports declares the behaviour the table gives it', () => {
    assert.deepEqual(Object.keys(bundled).sort(), Object.keys(VERSIONING_BEHAVIOURS).sort());
    for (const [type, workflow] of Object.entries(bundled)) {
      assert.equal(
        declaredBehaviour(workflow),
        VERSIONING_BEHAVIOURS[type as keyof typeof VERSIONING_BEHAVIOURS],
        type,
      );
    }
  });

  it('the workflows that wait for an operator for days move to the current build instead of holding an old one', () => {
    assert.equal(VERSIONING_BEHAVIOURS.orderWorkflow, 'AUTO_UPGRADE');
    assert.equal(VERSIONING_BEHAVIOURS.compensationWorkflow, 'AUTO_UPGRADE');
  });
});
