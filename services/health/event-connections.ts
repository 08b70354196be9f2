// Where each outbound event connection this process holds stands (Feishu's long connection,
// DingTalk's Stream): the connection reports each change, /healthz's body and the
// `orders_oa_connection_up` gauge read it. A connection that is down changes no status code: the
// callbacks and the webhook still take approvals, so an instance is not taken out of rotation.
import type { OaVendor } from '../../domain/oa-approval.js';
import type { ProductMetrics } from '../metrics/product-metrics.js';

/** `connecting` until the first connection is made and while a lost one is reopened. */
export type ConnectionState = 'connecting' | 'up' | 'down';

export interface EventConnections {
  /** The connection of `vendor` is now in `state`; the first report makes it held. */
  report(vendor: OaVendor, state: ConnectionState): void;
  /** Each held connection's state, for /healthz; empty when the process holds none. */
  states(): Partial<Record<OaVendor, ConnectionState>>;
}

export function eventConnections(metrics: Pick<ProductMetrics, 'connectionUp'>): EventConnections {
  const held: Partial<Record<OaVendor, ConnectionState>> = {};
  return {
    report(vendor, state) {
      held[vendor] = state;
      metrics.connectionUp(vendor, state === 'up');
    },
    states: () => ({ ...held }),
  };
}
