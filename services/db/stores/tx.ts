// The clients every statement and repository takes: the Prisma client, or the transaction client a
// `$transaction` callback is handed.
import type { PrismaClient } from '../generated/prisma/client.js';

export type { PrismaClient };
/** The client handed to a `$transaction` callback; repositories accept either. */
export type Tx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
