import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventConnections } from '../../../../services/health/event-connections.js';

describe('event connections', () => {
  it('holds none until one reports, then says where each stands and sets its gauge to 1 only while up', () => {
    const gauge: Record<string, number> = {};
    const connections = eventConnections({ connectionUp: (vendor, up) => (gauge[vendor] = up ? 1 : 0) });
    assert.deepEqual(connections.states(), {}, 'a process that opened no connection reports none');
    connections.report('feishu', 'connecting');
    connections.report('dingtalk', 'up');
    assert.deepEqual(connections.states(), { feishu: 'connecting', dingtalk: 'up' });
    assert.deepEqual(gauge, { feishu: 0, dingtalk: 1 });
    connections.report('dingtalk', 'down');
    connections.report('feishu', 'up');
    assert.deepEqual(connections.states(), { feishu: 'up', dingtalk: 'down' });
    assert.deepEqual(gauge, { feishu: 1, dingtalk: 0 });
  });

  it('answers a copy: what /healthz holds does not change when a connection reports later', () => {
    const connections = eventConnections({ connectionUp: () => {} });
    connections.report('feishu', 'up');
    const seen = connections.states();
    connections.report('feishu', 'down');
    assert.equal(seen.feishu, 'up');
  });
});
