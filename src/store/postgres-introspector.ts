import {
  DEFAULT_MIGRATION_LOCK_TABLE,
  DEFAULT_MIGRATION_TABLE,
  PostgresDialect,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type DatabaseMetadataOptions,
  type Kysely,
  type SchemaMetadata,
  type TableMetadata,
} from 'kysely';

/** One column of one table of the current schema, as the query below reads it. */
interface ColumnRow {
  schema: string;
  table: string;
  is_view: boolean;
  column: string;
  type: string;
  type_schema: string;
  not_null: boolean;
  has_default: boolean;
  serial_sequence: string | null;
  description: string | null;
}

/**
 * Kysely's own PostgreSQL introspector reads every schema of the database and calls
 * `has_schema_privilege(name, …)` on each: when another client drops a schema between the
 * catalog read and that call, the query fails with "schema … does not exist", and with it the
 * migrations Cutout runs at every start. This one reads the current schema only (the one
 * `search_path` picks, where Cutout's tables and Kysely's migration tables live), so what others
 * do to their schemas cannot fail Cutout's start.
 */
export class CurrentSchemaIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<unknown>;

  constructor(db: Kysely<unknown>) {
    this.#db = db;
  }

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<SchemaMetadata>`select nspname as name from pg_catalog.pg_namespace`.execute(this.#db);
    return rows;
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const internal = options.withInternalKyselyTables ? sql`` : sql`and c.relname not in (${DEFAULT_MIGRATION_TABLE}, ${DEFAULT_MIGRATION_LOCK_TABLE})`;
    const { rows } = await sql<ColumnRow>`
      select n.nspname as schema, c.relname as table, c.relkind = 'v' as is_view,
             a.attname as column, t.typname as type, tn.nspname as type_schema,
             a.attnotnull as not_null, a.atthasdef as has_default,
             pg_catalog.pg_get_serial_sequence(quote_ident(n.nspname) || '.' || quote_ident(c.relname), a.attname) as serial_sequence,
             pg_catalog.col_description(a.attrelid, a.attnum) as description
        from pg_catalog.pg_class c
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        join pg_catalog.pg_type t on t.oid = a.atttypid
        join pg_catalog.pg_namespace tn on tn.oid = t.typnamespace
       where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p') ${internal}
       order by c.relname, a.attnum`.execute(this.#db);
    const tables = new Map<string, TableMetadata>();
    for (const row of rows) {
      let table = tables.get(row.table);
      if (!table) {
        table = { name: row.table, schema: row.schema, isView: row.is_view, columns: [] };
        tables.set(row.table, table);
      }
      table.columns.push({
        name: row.column,
        dataType: row.type,
        dataTypeSchema: row.type_schema,
        isAutoIncrementing: row.serial_sequence !== null,
        isNullable: !row.not_null,
        hasDefaultValue: row.has_default,
        comment: row.description ?? undefined,
      });
    }
    return [...tables.values()];
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<DatabaseMetadata> {
    return { tables: await this.getTables(options) };
  }
}

/** {@link PostgresDialect} with the {@link CurrentSchemaIntrospector}. */
export class CurrentSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db);
  }
}
