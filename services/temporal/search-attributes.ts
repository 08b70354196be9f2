// Registers the custom search attributes on a namespace, idempotently. The dev server gets them
// at start-up (tools/harness/temporal-dev-server.ts); a self-hosted cluster through this call; Temporal
// Cloud namespaces are configured in its console.
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

const { IndexedValueType } = proto.temporal.api.enums.v1;
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';

export async function ensureSearchAttributes(client: Client, namespace: string): Promise<string[]> {
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = ALL_SEARCH_ATTRIBUTES.filter((attribute) => !known.has(attribute.name));
  if (missing.length === 0) return [];
  await client.connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((attribute) => [attribute.name, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
  return missing.map((attribute) => attribute.name);
}
