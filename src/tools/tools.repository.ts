import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { AccountQuery } from '../database/query.decorator';
import { activeSecrets, rotatedSecretColumns } from '../webhooks/signing-secrets';
import { ToolType } from './tool-rules';

/** A tool as the API shows it (never its secrets). */
export interface ToolRow {
  id: number;
  type: ToolType;
  name: string;
  description: string;
  /** A webhook tool's; null for the other types (as url, timeoutSeconds, speakWhileRunning; number is a transfer's). */
  parameters: object | null;
  url: string | null;
  timeoutSeconds: number | null;
  speakWhileRunning: string | null;
  number: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The fields a client sets: all of them on create (defaults applied, null where the type takes none), any subset on update. */
export type ToolFields = Omit<ToolRow, 'id' | 'createdAt' | 'updatedAt'>;

/** A tool as a turn calls it: what the model is told of it, and what its requests need (the secrets that sign them now). */
export type CallableTool = Omit<ToolRow, 'createdAt' | 'updatedAt'> & { secrets: string[] };

const COLUMNS = `id, type, name, description, parameters, url, timeout_seconds AS "timeoutSeconds", speak_while_running AS "speakWhileRunning",
  number, created_at AS "createdAt", updated_at AS "updatedAt"`;

/** PostgreSQL's unique_violation: another tool of the account has the name (IDX_tools_account_name). */
export const UNIQUE_VIOLATION = '23505';

const EXAMPLE_FIELDS: ToolFields = {
  type: 'webhook',
  name: 'book_table',
  description: 'Books a table.',
  parameters: { type: 'object', properties: { people: { type: 'integer' } }, required: ['people'] },
  url: 'https://bookings.example.com/tools/book-table',
  timeoutSeconds: 10,
  speakWhileRunning: 'One moment.',
  number: null,
};
const EXAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** JSON text of a schema for a `json` column (null stays null: the column is left as it is, or the type has none). */
const jsonText = (value: object | null | undefined) => (value === null || value === undefined ? null : JSON.stringify(value));

/** Every query of the tools. Each method takes the account id first and puts it in the WHERE. */
@Injectable()
export class ToolsRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery([1])
  list(accountId: number): Promise<ToolRow[]> {
    return this.db.query<ToolRow>(`SELECT ${COLUMNS} FROM tools WHERE account_id = $1 ORDER BY id`, [accountId]);
  }

  @AccountQuery([1, 2])
  async get(accountId: number, id: number): Promise<ToolRow | undefined> {
    const [row] = await this.db.query<ToolRow>(`SELECT ${COLUMNS} FROM tools WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return row;
  }

  /** A new tool; a name the account already uses fails with UNIQUE_VIOLATION. `secret`: a webhook tool's, null otherwise. */
  @AccountQuery([1, EXAMPLE_FIELDS, EXAMPLE_SECRET])
  async insert(accountId: number, fields: ToolFields, secret: string | null): Promise<ToolRow> {
    const [row] = await this.db.query<ToolRow>(
      `INSERT INTO tools (account_id, type, name, description, parameters, url, timeout_seconds, speak_while_running, number, secret)
       VALUES ($1, $2, $3, $4, $5::json, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
      [
        accountId,
        fields.type,
        fields.name,
        fields.description,
        jsonText(fields.parameters),
        fields.url,
        fields.timeoutSeconds,
        fields.speakWhileRunning,
        fields.number,
        secret,
      ],
    );
    return row;
  }

  /**
   * Changes the fields given (null means "not given": the service lets through only the fields the tool's type
   * takes, so a column a type leaves null stays null); a name the account already uses fails with UNIQUE_VIOLATION.
   */
  @AccountQuery([1, 2, { description: 'Books a table for up to 8 people.' }])
  async update(accountId: number, id: number, fields: Partial<Omit<ToolFields, 'type'>>): Promise<ToolRow | undefined> {
    const [row] = await this.db.query<ToolRow>(
      `UPDATE tools SET name = coalesce($3, name), description = coalesce($4, description), parameters = coalesce($5::json, parameters),
              url = coalesce($6, url), timeout_seconds = coalesce($7, timeout_seconds), speak_while_running = coalesce($8, speak_while_running),
              number = coalesce($9, number), updated_at = now()
        WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [
        accountId,
        id,
        fields.name ?? null,
        fields.description ?? null,
        jsonText(fields.parameters),
        fields.url ?? null,
        fields.timeoutSeconds ?? null,
        fields.speakWhileRunning ?? null,
        fields.number ?? null,
      ],
    );
    return row;
  }

  /** Whether the tool existed. Its agents lose it (agent_tools' rows cascade). */
  @AccountQuery([1, 2])
  async delete(accountId: number, id: number): Promise<boolean> {
    const deleted = await this.db.query(`DELETE FROM tools WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id]);
    return deleted.length > 0;
  }

  /** The new secret becomes current; the current one keeps signing beside it for `overlapHours`. False: no such webhook tool. */
  @AccountQuery([1, 2, EXAMPLE_SECRET, 24])
  async rotateSecret(accountId: number, id: number, secret: string, overlapHours: number): Promise<boolean> {
    const rotated = await this.db.query(
      `UPDATE tools SET ${rotatedSecretColumns('$3', '$4')}, updated_at = now()
        WHERE account_id = $1 AND id = $2 AND secret IS NOT NULL RETURNING id`,
      [accountId, id, secret, overlapHours],
    );
    return rotated.length > 0;
  }

  /** These tools of the account (ids of another account's or deleted ones are left out), with their signing secrets, by id. */
  @AccountQuery([1, [3, 4]])
  callable(accountId: number, ids: number[]): Promise<CallableTool[]> {
    return this.db.query<CallableTool>(
      `SELECT id, type, name, description, parameters, url, timeout_seconds AS "timeoutSeconds", speak_while_running AS "speakWhileRunning",
              number, CASE WHEN t.secret IS NULL THEN '{}' ELSE ${activeSecrets('t')} END AS secrets
         FROM tools t WHERE account_id = $1 AND id = ANY($2::int[]) ORDER BY id`,
      [accountId, ids],
    );
  }
}
