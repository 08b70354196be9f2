// The HTTP edge of a test service, reaching Temporal only through a TCP proxy the test controls
// (tools/harness/tcp-proxy.ts): for the start path's faults — answers late, lost, or never sent.
import type { Client } from '@temporalio/client';
import { type AppDeps, buildApp } from '../../edges/http/app.js';
import { createLazyClient } from '../../services/temporal/connection.js';
import { startTcpProxy, type TcpProxy } from '../../tools/harness/tcp-proxy.js';
import type { TestService } from './service.js';

export interface ProxiedEdge {
  proxy: TcpProxy;
  /** The edge's own Temporal client, through the proxy. */
  temporal: Client;
  edge: ReturnType<typeof buildApp>;
  close(): Promise<void>;
}

export async function startProxiedEdge(
  service: TestService,
  deps: Pick<AppDeps, 'connectors'> = {},
): Promise<ProxiedEdge> {
  const proxy = await startTcpProxy(service.config.temporal.address as string);
  const temporal = createLazyClient({ address: proxy.address, namespace: service.config.temporal.namespace });
  const edge = buildApp({ config: service.config, prisma: service.prisma, temporal, ...deps });
  await edge.ready();
  return {
    proxy,
    temporal,
    edge,
    close: async () => {
      await edge.close();
      await temporal.connection.close();
      await proxy.close();
    },
  };
}
