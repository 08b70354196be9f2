// Prisma CLI configuration. The service itself never runs the Prisma CLI at run time:
// migrations are applied by services/db/migrate.ts (docs/database.md, "Migrations").
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/orders' },
});
