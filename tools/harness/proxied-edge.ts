// The HTTP edge of a test service, reaching Temporal only through a TCP proxy the test controls
// (tools/harness/tcp-proxy.ts): for the start path's faults — answers late, lost, or never sent.
import type { Client } from '@temporalio/client';
import { type AppDeps, buildApp } from '../../edges/http/app.js';
import type { Config } from '../../app/env.js';
import { createLazyClient } from '../../services/temporal/connection.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import type { TestService } from './service.js';

export interface ProxiedEdge {
  proxy: TcpProxy;
  /** The edge's own Temporal client, through the proxy. */
  temporal: Client;
  edge: ReturnType<typeof buildApp>;
  close(): Promise<void>;
}

/** `config`: the edge's own settings (by default the service's), e.g. another start deadline. */
export async function startProxiedEdge(
  service: TestService,
  deps: Pick<AppDeps, 'connectors' | 'logger'> & { config?: Config } = {},
): Promise<ProxiedEdge> {
  const { config = service.config, ...appDeps } = deps;
  const proxy = await startTcpProxy(config.temporal.address as string);
  const temporal = createLazyClient({ address: proxy.address, namespace: config.temporal.namespace });
  const edge = buildApp({ config, prisma: service.prisma, temporal, ...appDeps });
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
