import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { AccountQuery, UnscopedQuery } from '../database/query.decorator';
import type { WidgetAvatar, WidgetMode, WidgetPosition } from './widget-options';

/** A widget site as its account sees it (no account id: a row is scoped by the query that read it). */
export interface WidgetSiteRow {
  id: number;
  name: string;
  agentId: number | null;
  /** A version of the agent that the site's conversations run; null: the agent's published version. */
  agentVersion: number | null;
  allowedDomain: string;
  widgetPosition: WidgetPosition;
  widgetLabel: string;
  widgetAvatar: WidgetAvatar;
  widgetGreeting: string;
  widgetMode: WidgetMode;
  widgetAskName: boolean;
  widgetAskPhone: boolean;
  siteKey: string;
  createdAt: Date;
  updatedAt: Date;
}

/** The fields a client sets: every one on create (defaults applied), any subset on update. */
export type WidgetSiteFields = Omit<WidgetSiteRow, 'id' | 'siteKey' | 'createdAt' | 'updatedAt'>;

/**
 * What the public widget routes need of the site a key names: where it may run, how it looks, and the agent
 * that answers it (null when it has none, and never an agent of another account).
 */
export interface WidgetConfigRow extends Pick<
  WidgetSiteRow,
  'allowedDomain' | 'widgetPosition' | 'widgetLabel' | 'widgetAvatar' | 'widgetGreeting' | 'widgetMode' | 'widgetAskName' | 'widgetAskPhone'
> {
  agentId: number | null;
  agentName: string | null;
  agentLanguage: string | null;
}

/** What starting a widget conversation needs of the site a key names (the agent: only one of the site's account). */
export interface WidgetSessionSiteRow extends Pick<WidgetSiteRow, 'id' | 'allowedDomain' | 'widgetGreeting'> {
  /** The site's account, which the conversation belongs to. */
  accountId: number;
  agent: { id: number; name: string; language: string } | null;
  /** The version of the agent the site pins (null: the published one). */
  agentVersion: number | null;
}

const COLUMNS = `id, name, agent_id AS "agentId", agent_version AS "agentVersion", allowed_domain AS "allowedDomain", widget_position AS "widgetPosition",
  widget_label AS "widgetLabel", widget_avatar AS "widgetAvatar", widget_greeting AS "widgetGreeting", widget_mode AS "widgetMode",
  widget_ask_name AS "widgetAskName", widget_ask_phone AS "widgetAskPhone", site_key AS "siteKey", created_at AS "createdAt", updated_at AS "updatedAt"`;

const EXAMPLE_FIELDS: WidgetSiteFields = {
  name: 'Storefront',
  agentId: 2,
  agentVersion: null,
  allowedDomain: '*.example.com',
  widgetPosition: 'bottom-right',
  widgetLabel: 'Talk to us',
  widgetAvatar: 'default',
  widgetGreeting: '',
  widgetMode: 'voice',
  widgetAskName: true,
  widgetAskPhone: true,
};
const EXAMPLE_KEY = 'ws_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

/** Every query of the widget_sites table. The management methods take the account id first and put it in the WHERE. */
@Injectable()
export class WidgetSitesRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery([1])
  list(accountId: number): Promise<WidgetSiteRow[]> {
    return this.db.query<WidgetSiteRow>(`SELECT ${COLUMNS} FROM widget_sites WHERE account_id = $1 ORDER BY id`, [accountId]);
  }

  @AccountQuery([1, 3])
  async get(accountId: number, id: number): Promise<WidgetSiteRow | undefined> {
    const [site] = await this.db.query<WidgetSiteRow>(`SELECT ${COLUMNS} FROM widget_sites WHERE account_id = $1 AND id = $2`, [
      accountId,
      id,
    ]);
    return site;
  }

  /** The agent must have been checked to be of the account; the foreign key refuses one deleted since (23503). */
  @AccountQuery([1, EXAMPLE_FIELDS, EXAMPLE_KEY])
  async insert(accountId: number, fields: WidgetSiteFields, siteKey: string): Promise<WidgetSiteRow> {
    const [site] = await this.db.query<WidgetSiteRow>(
      `INSERT INTO widget_sites (account_id, agent_id, name, allowed_domain, widget_position, widget_label, widget_avatar,
                                 widget_greeting, widget_mode, widget_ask_name, widget_ask_phone, site_key, agent_version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING ${COLUMNS}`,
      [
        accountId,
        fields.agentId,
        fields.name,
        fields.allowedDomain,
        fields.widgetPosition,
        fields.widgetLabel,
        fields.widgetAvatar,
        fields.widgetGreeting,
        fields.widgetMode,
        fields.widgetAskName,
        fields.widgetAskPhone,
        siteKey,
        fields.agentVersion,
      ],
    );
    return site;
  }

  /**
   * Changes the fields given; the others keep their values. Every column but agent_id and agent_version is NOT NULL,
   * so null means "not given" there; those two may be set to null, so whether each was given travels separately.
   */
  @AccountQuery([1, 3, { name: 'Storefront (EU)', agentId: null }])
  async update(accountId: number, id: number, fields: Partial<WidgetSiteFields>): Promise<WidgetSiteRow | undefined> {
    const [site] = await this.db.query<WidgetSiteRow>(
      `UPDATE widget_sites
          SET agent_id = CASE WHEN $3 THEN $4::integer ELSE agent_id END, name = coalesce($5, name),
              allowed_domain = coalesce($6, allowed_domain), widget_position = coalesce($7, widget_position),
              widget_label = coalesce($8, widget_label), widget_avatar = coalesce($9, widget_avatar),
              widget_greeting = coalesce($10, widget_greeting), widget_mode = coalesce($11, widget_mode),
              widget_ask_name = coalesce($12, widget_ask_name), widget_ask_phone = coalesce($13, widget_ask_phone),
              agent_version = CASE WHEN $14 THEN $15::integer ELSE agent_version END, updated_at = now()
        WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [
        accountId,
        id,
        fields.agentId !== undefined,
        ...[
          fields.agentId,
          fields.name,
          fields.allowedDomain,
          fields.widgetPosition,
          fields.widgetLabel,
          fields.widgetAvatar,
          fields.widgetGreeting,
          fields.widgetMode,
          fields.widgetAskName,
          fields.widgetAskPhone,
        ].map((value) => value ?? null),
        fields.agentVersion !== undefined,
        fields.agentVersion ?? null,
      ],
    );
    return site;
  }

  /** Replaces the key in one UPDATE: the old key names nothing from then on. */
  @AccountQuery([1, 3, EXAMPLE_KEY])
  async rotateKey(accountId: number, id: number, siteKey: string): Promise<WidgetSiteRow | undefined> {
    const [site] = await this.db.query<WidgetSiteRow>(
      `UPDATE widget_sites SET site_key = $3, updated_at = now() WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [accountId, id, siteKey],
    );
    return site;
  }

  /** Whether the site existed. */
  @AccountQuery([1, 3])
  async delete(accountId: number, id: number): Promise<boolean> {
    const deleted = await this.db.query(`DELETE FROM widget_sites WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id]);
    return deleted.length > 0;
  }

  /**
   * The site a public widget route names by its key, with its agent only when that agent is of the site's account:
   * the name and language of the version its conversations run (the pinned one, else the latest published, else the
   * agent's current settings).
   */
  @UnscopedQuery('the public widget routes have no API key: the site key is their credential, and it names one site', [EXAMPLE_KEY])
  async findConfigBySiteKey(siteKey: string): Promise<WidgetConfigRow | undefined> {
    const [config] = await this.db.query<WidgetConfigRow>(
      `SELECT site.allowed_domain AS "allowedDomain", site.widget_position AS "widgetPosition", site.widget_label AS "widgetLabel",
              site.widget_avatar AS "widgetAvatar", site.widget_greeting AS "widgetGreeting", site.widget_mode AS "widgetMode",
              site.widget_ask_name AS "widgetAskName", site.widget_ask_phone AS "widgetAskPhone", agent.id AS "agentId",
              coalesce(runs.name, agent.name) AS "agentName", coalesce(runs.language, agent.language) AS "agentLanguage"
         FROM widget_sites site
         LEFT JOIN agents agent ON agent.id = site.agent_id AND agent.account_id = site.account_id
         LEFT JOIN LATERAL (SELECT v.name, v.language FROM agent_versions v WHERE v.account_id = site.account_id AND v.agent_id = agent.id
                             ORDER BY v.version = site.agent_version DESC, v.version DESC LIMIT 1) runs ON true
        WHERE site.site_key = $1`,
      [siteKey],
    );
    return config;
  }

  /** The site a widget session is started on, by its key, with its agent only when that agent is of the site's account. */
  @UnscopedQuery('a widget session is started with the site key as its credential, which names one site (and its account)', [EXAMPLE_KEY])
  async findSessionSiteBySiteKey(siteKey: string): Promise<WidgetSessionSiteRow | undefined> {
    const [site] = await this.db.query<WidgetSessionSiteRow>(
      `SELECT site.id, site.account_id AS "accountId", site.allowed_domain AS "allowedDomain", site.widget_greeting AS "widgetGreeting",
              CASE WHEN agent.id IS NULL THEN NULL ELSE json_build_object('id', agent.id, 'name', agent.name, 'language', agent.language) END AS agent,
              site.agent_version AS "agentVersion"
         FROM widget_sites site
         LEFT JOIN agents agent ON agent.id = site.agent_id AND agent.account_id = site.account_id
        WHERE site.site_key = $1`,
      [siteKey],
    );
    return site;
  }
}
