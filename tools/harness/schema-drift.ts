// Compares a migrated database with its store's schema (prisma/schema.prisma on PostgreSQL,
// prisma/mysql/schema.prisma on MySQL/MariaDB), since `prisma migrate diff` needs a schema engine
// that cannot be downloaded here. The schema is read by Prisma's own parser (the WASM build that
// `prisma generate` uses); the database through its catalogue. Each store has its own catalogue
// reader and type names; the comparison is one.
import { readFileSync } from 'node:fs';
import type mariadb from 'mariadb';
import type pg from 'pg';

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: string;
  type: string;
  isRequired: boolean;
  isList: boolean;
  nativeType?: [string, string[]] | null;
  relationFromFields?: string[];
  relationToFields?: string[];
}
interface DmmfModel {
  name: string;
  dbName: string | null;
  fields: DmmfField[];
}
interface DmmfIndex {
  model: string;
  type: 'id' | 'unique' | 'normal' | 'fulltext';
  dbName?: string | null;
  fields: { name: string }[];
}
interface Dmmf {
  datamodel: { models: DmmfModel[]; indexes: DmmfIndex[] };
}

export async function readSchemaDmmf(schemaPath: string, schemaText = readFileSync(schemaPath, 'utf8')): Promise<Dmmf> {
  const registry = globalThis as { PRISMA_WASM_PANIC_REGISTRY?: { set_message: (message: string) => void } };
  let panic = '';
  registry.PRISMA_WASM_PANIC_REGISTRY ??= { set_message: (message) => (panic = message) };
  const wasm = (await import('@prisma/prisma-schema-wasm')) as { get_dmmf: (params: string) => string };
  try {
    return JSON.parse(wasm.get_dmmf(JSON.stringify({ prismaSchema: [['schema.prisma', schemaText]] }))) as Dmmf;
  } catch (error) {
    throw new Error(`could not read ${schemaPath}: ${panic || (error as Error).message}`);
  }
}

interface ExpectedColumn {
  table: string;
  column: string;
  type: string;
  nullable: boolean;
}

/** What the database holds, in the names the comparison uses. */
interface Catalog {
  /** `table.column` → its type as the store names it, and whether it takes NULL. */
  columns: Map<string, { type: string; nullable: boolean }>;
  /** `table.index` → its table, columns in order, and whether it is unique. */
  indexes: Map<string, { table: string; columns: string[]; unique: boolean }>;
  /** `table.column->table.column`. */
  foreignKeys: Set<string>;
}

interface Store {
  /** The column type the catalogue reports for a Prisma field. */
  expectedType(field: DmmfField): string;
  /** The name the catalogue gives a model's primary key. */
  primaryKeyName(table: string): string;
}

const POSTGRESQL: Store = {
  expectedType(field) {
    const [native, args = []] = field.nativeType ?? [];
    switch (native ?? field.type) {
      case 'VarChar':
        return `character varying(${args[0]})`;
      case 'Char':
        return `character(${args[0]})`;
      case 'Decimal':
        return args.length > 0 ? `numeric(${args.join(',')})` : 'numeric(65,30)';
      case 'Timestamptz':
        return `timestamp with time zone(${args[0] ?? 6})`;
      case 'DateTime':
        return 'timestamp without time zone(3)';
      case 'String':
        return 'text';
      case 'Int':
        return 'integer';
      case 'BigInt':
        return 'bigint';
      case 'Boolean':
        return 'boolean';
      case 'Json':
        return 'jsonb';
      default:
        return `unmapped ${native ?? field.type}`;
    }
  },
  primaryKeyName: (table) => `${table}_pkey`,
};

const MYSQL: Store = {
  expectedType(field) {
    const [native, args = []] = field.nativeType ?? [];
    switch (native ?? field.type) {
      case 'VarChar':
        return `varchar(${args[0]})`;
      case 'Char':
        return `char(${args[0]})`;
      case 'Decimal':
        return args.length > 0 ? `decimal(${args.join(',')})` : 'decimal(65,30)';
      case 'DateTime':
        return `datetime(${args[0] ?? 3})`;
      case 'Text':
        return 'text';
      case 'String':
        return 'varchar(191)';
      case 'Int':
        return 'int';
      case 'BigInt':
        return 'bigint';
      case 'Boolean':
        return 'tinyint(1)';
      case 'Json':
        return 'json';
      default:
        return `unmapped ${native ?? field.type}`;
    }
  },
  primaryKeyName: (table) => `${table}.PRIMARY`,
};

/** The drift between a PostgreSQL database (its current schema) and `dmmf`: one line per difference. */
export async function schemaDrift(db: pg.Client | pg.Pool, dmmf: Dmmf): Promise<string[]> {
  return compare(dmmf, await postgresqlCatalog(db), POSTGRESQL);
}

/** The drift between a MySQL/MariaDB database (the connection's) and `dmmf`. */
export async function mysqlSchemaDrift(db: mariadb.Connection, dmmf: Dmmf): Promise<string[]> {
  return compare(dmmf, await mysqlCatalog(db), MYSQL);
}

async function postgresqlCatalog(db: pg.Client | pg.Pool): Promise<Catalog> {
  const { rows } = await db.query<{
    table_name: string;
    column_name: string;
    data_type: string;
    is_nullable: string;
    character_maximum_length: number | null;
    numeric_precision: number | null;
    numeric_scale: number | null;
    datetime_precision: number | null;
    udt_name: string;
  }>(`SELECT table_name, column_name, data_type, is_nullable, character_maximum_length,
             numeric_precision, numeric_scale, datetime_precision, udt_name
      FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name <> '_prisma_migrations'`);
  const columns = new Map(
    rows.map((row) => {
      let type = row.data_type;
      if (type === 'ARRAY') type = `${row.udt_name === '_text' ? 'text' : row.udt_name.slice(1)}[]`;
      else if (row.character_maximum_length !== null) type += `(${row.character_maximum_length})`;
      else if (type === 'numeric') type += `(${row.numeric_precision},${row.numeric_scale})`;
      else if (type.startsWith('timestamp')) type += `(${row.datetime_precision})`;
      return [`${row.table_name}.${row.column_name}`, { type, nullable: row.is_nullable === 'YES' }];
    }),
  );
  const indexRows = await db.query<{
    index_name: string;
    table_name: string;
    is_unique: boolean;
    columns: string[];
  }>(
    `SELECT i.relname AS index_name, t.relname AS table_name, ix.indisunique AS is_unique,
            array_agg(a.attname ORDER BY k.ordinality)::text[] AS columns
     FROM pg_index ix
     JOIN pg_class i ON i.oid = ix.indexrelid
     JOIN pg_class t ON t.oid = ix.indrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = current_schema()
     CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ordinality)
     JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
     WHERE t.relname <> '_prisma_migrations'
     GROUP BY i.relname, t.relname, ix.indisunique`,
  );
  const indexes = new Map(
    indexRows.rows.map((row) => [
      row.index_name,
      { table: row.table_name, columns: row.columns, unique: row.is_unique },
    ]),
  );
  const foreignKeys = await db.query<{
    table_name: string;
    column_name: string;
    foreign_table: string;
    foreign_column: string;
  }>(
    `SELECT kcu.table_name, kcu.column_name, ccu.table_name AS foreign_table, ccu.column_name AS foreign_column
     FROM information_schema.table_constraints tc
     JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name
     JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name
     WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema()`,
  );
  return {
    columns,
    indexes,
    foreignKeys: new Set(
      foreignKeys.rows.map((row) => `${row.table_name}.${row.column_name}->${row.foreign_table}.${row.foreign_column}`),
    ),
  };
}

/**
 * MySQL's catalogue: COLUMN_TYPE, with integer display widths dropped (MariaDB and MySQL 5 show
 * them, MySQL 8 does not) and MariaDB's JSON read as what it is declared (MariaDB stores JSON as
 * LONGTEXT with a json_valid check; no column of the model is LONGTEXT otherwise).
 */
async function mysqlCatalog(db: mariadb.Connection): Promise<Catalog> {
  const rows = await db.query<{ table_name: string; column_name: string; column_type: string; is_nullable: string }[]>(
    `SELECT TABLE_NAME AS table_name, COLUMN_NAME AS column_name, COLUMN_TYPE AS column_type,
            IS_NULLABLE AS is_nullable
     FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME <> '_prisma_migrations'`,
  );
  const columns = new Map(
    rows.map((row) => {
      let type = row.column_type.toLowerCase();
      if (type === 'longtext') type = 'json';
      if (type.startsWith('int(') || type.startsWith('bigint(')) type = type.slice(0, type.indexOf('('));
      return [`${row.table_name}.${row.column_name}`, { type, nullable: row.is_nullable === 'YES' }];
    }),
  );
  const indexRows = await db.query<
    { table_name: string; index_name: string; non_unique: number | bigint; column_name: string }[]
  >(
    `SELECT TABLE_NAME AS table_name, INDEX_NAME AS index_name, NON_UNIQUE AS non_unique, COLUMN_NAME AS column_name
     FROM information_schema.STATISTICS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME <> '_prisma_migrations'
     ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
  );
  const indexes = new Map<string, { table: string; columns: string[]; unique: boolean }>();
  for (const row of indexRows) {
    // Index names are per table in MySQL: every primary key is PRIMARY.
    const name = row.index_name === 'PRIMARY' ? `${row.table_name}.PRIMARY` : row.index_name;
    const index = indexes.get(name) ?? { table: row.table_name, columns: [], unique: Number(row.non_unique) === 0 };
    index.columns.push(row.column_name);
    indexes.set(name, index);
  }
  const foreignKeys = await db.query<
    { table_name: string; column_name: string; foreign_table: string; foreign_column: string }[]
  >(
    `SELECT TABLE_NAME AS table_name, COLUMN_NAME AS column_name, REFERENCED_TABLE_NAME AS foreign_table,
            REFERENCED_COLUMN_NAME AS foreign_column
     FROM information_schema.KEY_COLUMN_USAGE
     WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL`,
  );
  return {
    columns,
    indexes,
    foreignKeys: new Set(
      foreignKeys.map((row) => `${row.table_name}.${row.column_name}->${row.foreign_table}.${row.foreign_column}`),
    ),
  };
}

function compare(dmmf: Dmmf, catalog: Catalog, store: Store): string[] {
  const problems: string[] = [];
  const tableOf = new Map(dmmf.datamodel.models.map((model) => [model.name, model.dbName ?? model.name]));
  const columnOf = (model: DmmfModel, fieldName: string) => {
    const field = model.fields.find((candidate) => candidate.name === fieldName);
    return field?.dbName ?? fieldName;
  };

  const expected: ExpectedColumn[] = dmmf.datamodel.models.flatMap((model) =>
    model.fields
      .filter((field) => field.kind === 'scalar')
      .map((field) => ({
        table: model.dbName ?? model.name,
        column: field.dbName ?? field.name,
        // A list is an array of the element type: `String[]` is `text[]`.
        type: field.isList ? `${store.expectedType(field)}[]` : store.expectedType(field),
        nullable: !field.isRequired,
      })),
  );

  const actual = new Map(catalog.columns);
  for (const column of expected) {
    const name = `${column.table}.${column.column}`;
    const found = actual.get(name);
    if (!found) {
      problems.push(`${name}: in schema.prisma, missing in the database`);
      continue;
    }
    if (found.type !== column.type)
      problems.push(`${name}: schema.prisma says ${column.type}, the database has ${found.type}`);
    if (found.nullable !== column.nullable) {
      problems.push(`${name}: schema.prisma says ${column.nullable ? 'NULL' : 'NOT NULL'}, the database differs`);
    }
    actual.delete(name);
  }
  for (const name of actual.keys()) problems.push(`${name}: in the database, missing in schema.prisma`);

  const indexes = new Map(catalog.indexes);
  for (const index of dmmf.datamodel.indexes) {
    const model = dmmf.datamodel.models.find((candidate) => candidate.name === index.model);
    if (!model) continue;
    const table = tableOf.get(index.model) as string;
    const columns = index.fields.map((field) => columnOf(model, field.name));
    const name =
      index.type === 'id'
        ? store.primaryKeyName(table)
        : (index.dbName ?? `${table}_${columns.join('_')}_${index.type === 'unique' ? 'key' : 'idx'}`);
    const found = indexes.get(name);
    if (!found) {
      problems.push(`index ${name} on ${table}(${columns.join(', ')}): in schema.prisma, missing in the database`);
      continue;
    }
    const unique = index.type !== 'normal';
    if (found.table !== table || found.columns.join(',') !== columns.join(',') || found.unique !== unique) {
      problems.push(
        `index ${name}: schema.prisma says ${unique ? 'unique ' : ''}${table}(${columns.join(', ')}), ` +
          `the database has ${found.unique ? 'unique ' : ''}${found.table}(${found.columns.join(', ')})`,
      );
    }
    indexes.delete(name);
  }
  for (const name of indexes.keys()) problems.push(`index ${name}: in the database, missing in schema.prisma`);

  const fkSet = new Set(catalog.foreignKeys);
  for (const model of dmmf.datamodel.models) {
    for (const field of model.fields) {
      if (field.kind !== 'object' || !field.relationFromFields?.length) continue;
      const target = dmmf.datamodel.models.find((candidate) => candidate.name === field.type);
      if (!target) continue;
      field.relationFromFields.forEach((from, index) => {
        const to = field.relationToFields?.[index] ?? 'id';
        const key = `${tableOf.get(model.name)}.${columnOf(model, from)}->${tableOf.get(target.name)}.${columnOf(target, to)}`;
        if (!fkSet.delete(key)) problems.push(`foreign key ${key}: in schema.prisma, missing in the database`);
      });
    }
  }
  for (const key of fkSet) problems.push(`foreign key ${key}: in the database, missing in schema.prisma`);
  return problems;
}
