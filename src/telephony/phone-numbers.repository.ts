import { Injectable } from '@nestjs/common';
import { AgentRow } from '../agents/agents.repository';
import { Database } from '../database/database';
import { AccountQuery, UnscopedQuery } from '../database/query.decorator';
import type { PhoneProvider } from './phone-number.entity';

/** A phone number as its account sees it (never its auth token). */
export interface PhoneNumberRow {
  id: number;
  number: string;
  provider: PhoneProvider;
  agentId: number | null;
  /** A version of the agent that the number's calls run; null: the agent's published version. */
  agentVersion: number | null;
  label: string;
  greeting: string;
  twilioAccountSid: string;
  createdAt: Date;
  updatedAt: Date;
}

/** The fields a client sets: every one on create (defaults applied), any subset on update. */
export type PhoneNumberFields = Pick<
  PhoneNumberRow,
  'number' | 'provider' | 'agentId' | 'agentVersion' | 'label' | 'greeting' | 'twilioAccountSid'
>;

/** A number with its sealed auth token: what the service needs to speak to the carrier for it. */
export interface PhoneNumberWithToken extends PhoneNumberRow {
  twilioAuthTokenSealed: Buffer;
}

/** What a carrier webhook needs of the number its path names: its account, credentials, greeting and agent. */
export interface WebhookNumberRow {
  id: number;
  accountId: number;
  number: string;
  twilioAccountSid: string;
  twilioAuthTokenSealed: Buffer;
  greeting: string;
  /** Its agent, only when one of the number's account; null when it has none. */
  agent: Pick<AgentRow, 'id' | 'name' | 'language'> | null;
  /** The version of the agent the number pins (null: the published one). */
  agentVersion: number | null;
}

const COLUMNS = `id, number, provider, agent_id AS "agentId", agent_version AS "agentVersion", label, greeting, twilio_account_sid AS "twilioAccountSid",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

const EXAMPLE_FIELDS: PhoneNumberFields = {
  number: '+14155550100',
  provider: 'twilio',
  agentId: 2,
  agentVersion: null,
  label: 'Front desk',
  greeting: 'Namaste, how can I help?',
  twilioAccountSid: 'AC0123456789abcdef0123456789abcdef',
};
const EXAMPLE_SEALED = Buffer.from('sealed auth token');

/** Every query of the phone_numbers table. The management methods take the account id first and put it in the WHERE. */
@Injectable()
export class PhoneNumbersRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery([1])
  list(accountId: number): Promise<PhoneNumberRow[]> {
    return this.db.query<PhoneNumberRow>(`SELECT ${COLUMNS} FROM phone_numbers WHERE account_id = $1 ORDER BY id`, [accountId]);
  }

  @AccountQuery([1, 3])
  async get(accountId: number, id: number): Promise<PhoneNumberRow | undefined> {
    const [row] = await this.db.query<PhoneNumberRow>(`SELECT ${COLUMNS} FROM phone_numbers WHERE account_id = $1 AND id = $2`, [
      accountId,
      id,
    ]);
    return row;
  }

  /** The number with its sealed auth token (a PATCH of its credentials, a call placed from it). */
  @AccountQuery([1, 3])
  async getWithToken(accountId: number, id: number): Promise<PhoneNumberWithToken | undefined> {
    const [row] = await this.db.query<PhoneNumberWithToken>(
      `SELECT ${COLUMNS}, twilio_auth_token_sealed AS "twilioAuthTokenSealed" FROM phone_numbers WHERE account_id = $1 AND id = $2`,
      [accountId, id],
    );
    return row;
  }

  /** The id of the account's number `number`, if it has it (the uniqueness a create or a change must keep). */
  @AccountQuery([1, '+14155550100'])
  async idOf(accountId: number, number: string): Promise<number | undefined> {
    const [row] = await this.db.query<{ id: number }>(`SELECT id FROM phone_numbers WHERE account_id = $1 AND number = $2`, [
      accountId,
      number,
    ]);
    return row?.id;
  }

  /**
   * An id for a number not stored yet, from the table's sequence: the carrier is pointed at the number's URLs,
   * which hold its id, before the row is written, so that nothing is saved when the carrier refuses.
   */
  @UnscopedQuery('a new id is taken from the sequence of the table before the row exists, whoever the account', [])
  async reserveId(): Promise<number> {
    const [row] = await this.db.query<{ id: number }>(`SELECT nextval(pg_get_serial_sequence('phone_numbers', 'id'))::int AS id`);
    return row.id;
  }

  /** The agent must have been checked to be of the account; the foreign key refuses one deleted since (23503). */
  @AccountQuery([1, 3, EXAMPLE_FIELDS, EXAMPLE_SEALED])
  async insert(accountId: number, id: number, fields: PhoneNumberFields, authTokenSealed: Buffer): Promise<PhoneNumberRow> {
    const [row] = await this.db.query<PhoneNumberRow>(
      `INSERT INTO phone_numbers (account_id, id, number, provider, agent_id, label, greeting, twilio_account_sid, twilio_auth_token_sealed, agent_version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
      [
        accountId,
        id,
        fields.number,
        fields.provider,
        fields.agentId,
        fields.label,
        fields.greeting,
        fields.twilioAccountSid,
        authTokenSealed,
        fields.agentVersion,
      ],
    );
    return row;
  }

  /**
   * Changes the fields given (and the sealed token when given); the others keep their values. agent_id and
   * agent_version may be set to null, so whether each was given travels separately.
   */
  @AccountQuery([1, 3, { label: 'Reception', agentId: null }, undefined])
  async update(
    accountId: number,
    id: number,
    fields: Partial<PhoneNumberFields>,
    authTokenSealed: Buffer | undefined,
  ): Promise<PhoneNumberRow | undefined> {
    const [row] = await this.db.query<PhoneNumberRow>(
      `UPDATE phone_numbers
          SET agent_id = CASE WHEN $3 THEN $4::integer ELSE agent_id END, number = coalesce($5, number), label = coalesce($6, label),
              greeting = coalesce($7, greeting), twilio_account_sid = coalesce($8, twilio_account_sid),
              twilio_auth_token_sealed = coalesce($9, twilio_auth_token_sealed),
              agent_version = CASE WHEN $10 THEN $11::integer ELSE agent_version END, updated_at = now()
        WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [
        accountId,
        id,
        fields.agentId !== undefined,
        ...[fields.agentId, fields.number, fields.label, fields.greeting, fields.twilioAccountSid, authTokenSealed].map(
          (value) => value ?? null,
        ),
        fields.agentVersion !== undefined,
        fields.agentVersion ?? null,
      ],
    );
    return row;
  }

  /** Whether the number existed. */
  @AccountQuery([1, 3])
  async delete(accountId: number, id: number): Promise<boolean> {
    const deleted = await this.db.query(`DELETE FROM phone_numbers WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id]);
    return deleted.length > 0;
  }

  /** The number a carrier webhook names by its id, with its agent only when that agent is of the number's account. */
  @UnscopedQuery("the carrier's webhooks have no API key: the path names the number, whose auth token then checks the signature", [3])
  async findForWebhook(id: number): Promise<WebhookNumberRow | undefined> {
    const [row] = await this.db.query<WebhookNumberRow>(
      `SELECT phone.id, phone.account_id AS "accountId", phone.number, phone.twilio_account_sid AS "twilioAccountSid",
              phone.twilio_auth_token_sealed AS "twilioAuthTokenSealed", phone.greeting,
              CASE WHEN agent.id IS NULL THEN NULL ELSE json_build_object('id', agent.id, 'name', agent.name, 'language', agent.language) END AS agent,
              phone.agent_version AS "agentVersion"
         FROM phone_numbers phone
         LEFT JOIN agents agent ON agent.id = phone.agent_id AND agent.account_id = phone.account_id
        WHERE phone.id = $1`,
      [id],
    );
    return row;
  }
}
