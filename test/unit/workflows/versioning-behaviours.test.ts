import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as bundled from '../../../workflows/index.js';
import { definitionOptionsFor, VERSIONING_BEHAVIOURS } from '../../../workflows/versioning-behaviours.js';

/** What setWorkflowOptions attached to a workflow function: a getter the worker calls inside the run. */
function declaredOptions(workflow: unknown): unknown {
  return (workflow as { workflowDefinitionOptions?: unknown }).workflowDefinitionOptions;
}

const BUILD_A = { deploymentName: 'orders', buildId: 'a' };

describe('versioning behaviour of each workflow type', () => {
  it('every workflow type the bundle exports declares its options, and the table has a behaviour for each', () => {
    assert.deepEqual(Object.keys(bundled).sort(), Object.keys(VERSIONING_BEHAVIOURS).sort());
    for (const [type, workflow] of Object.entries(bundled)) {
      assert.equal(typeof declaredOptions(workflow), 'function', `${type} declares its options`);
    }
  });

  // An unversioned worker reports its bundle's checksum as a build id, in no deployment.
  const UNVERSIONED = { deploymentName: '', buildId: 'checksum' };

  it('names the behaviour to a versioned worker only: the server refuses it from an unversioned one', () => {
    for (const type of Object.keys(VERSIONING_BEHAVIOURS) as (keyof typeof VERSIONING_BEHAVIOURS)[]) {
      assert.deepEqual(definitionOptionsFor(type, BUILD_A), { versioningBehavior: VERSIONING_BEHAVIOURS[type] });
      assert.deepEqual(definitionOptionsFor(type, undefined), {});
      assert.deepEqual(definitionOptionsFor(type, UNVERSIONED), {});
    }
  });

  it('the workflows that wait for an operator for days move to the current build instead of holding an old one', () => {
    assert.equal(VERSIONING_BEHAVIOURS.orderWorkflow, 'AUTO_UPGRADE');
    assert.equal(VERSIONING_BEHAVIOURS.compensationWorkflow, 'AUTO_UPGRADE');
  });
});
