// The stores there are, and which one a connection URL names: light enough for the settings.
export const STORES = ['postgresql', 'mysql'] as const;
export type Store = (typeof STORES)[number];

/** The store a connection URL names; undefined for any other scheme. */
export function storeOfUrl(url: string): Store | undefined {
  const scheme = url.slice(0, url.indexOf('://')).toLowerCase();
  if (scheme === 'postgresql' || scheme === 'postgres') return 'postgresql';
  if (scheme === 'mysql' || scheme === 'mariadb') return 'mysql';
  return undefined;
}
