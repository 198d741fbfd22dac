import { Injectable } from '@nestjs/common';
import { answeringVersionJson } from '../agent-versions/agent-versions.repository';
import { AnsweringAgent } from '../agents/agents.repository';
import type { TurnLatency } from '../calls/call.entity';
import { Database, Sql } from '../database/database';
import { AccountQuery, UnscopedQuery } from '../database/query.decorator';
import { ConversationCallType, ConversationChannel, ConversationStatus, MessageSpeaker } from './conversation.entity';

/** What a new conversation is made of. */
export interface NewConversation {
  id: string;
  tokenHash: string;
  agentId: number;
  agentName: string;
  replyLanguage: string;
  /** The agent version it runs (null: the agent's current settings). */
  agentVersion: number | null;
  channel: ConversationChannel;
  callType: ConversationCallType;
  website: string;
  /** The widget site it starts on; null for an API conversation. */
  siteId: number | null;
  allowedDomain: string | null;
  name: string;
  phone: string;
  isTest: boolean;
}

/** A conversation as its bearer token opens it: enough to scope every further query and answer CORS. */
export interface ConversationAccess {
  accountId: number;
  id: string;
  agentId: number;
  status: ConversationStatus;
  /** Active, but without a message for the idle time: it is to be ended. */
  idle: boolean;
  /** null: an API conversation (the management API's CORS origins apply). */
  allowedDomain: string | null;
  /** The widget site it started on (null: an API conversation, or one started before sites were kept). */
  siteId: number | null;
}

/** The CORS rule of a conversation, for a preflight (which carries no token). */
export type ConversationCorsRule = Pick<ConversationAccess, 'allowedDomain'>;

export interface MessageRow {
  speaker: MessageSpeaker;
  text: string;
  at: Date;
  /** Where it starts in the recording of a spoken conversation, in seconds; null for a message typed or not recorded. */
  startSeconds: number | null;
  /** An agent's reply to a spoken turn: where the turn's time went; null for every other message. */
  latencyMs: TurnLatency | null;
}

/** Who the conversation is with, as it started: what a tool's request tells the customer's system. */
export interface ConversationParty {
  channel: ConversationChannel;
  phone: string;
  name: string;
}

/** A visitor's message as the conversation took it: its state, and the message's place when it was accepted. */
export interface MessageAcceptance extends ConversationAccess, ConversationParty {
  visitorMessageCount: number;
  /** A reply (to an earlier message) was being produced. */
  replying: boolean;
  /** The accepted message's position (the reply takes the next one); null when refused. */
  seq: number | null;
  /** The messages before it, oldest first (at most the limit asked for), tools' entries left out. */
  history: { speaker: Exclude<MessageSpeaker, 'tool'>; text: string }[];
  /** The conversation's agent, read in the same statement; null once it was deleted. */
  agent: AnsweringAgent | null;
}

/** How many conversations are active, of an account, of one of its sites, and on the phone (ConversationsRepository.countActive). */
export interface ActiveConversations {
  account: number;
  site: number;
  /** The account's phone calls in progress (channel `phone`), inbound and outbound. */
  phone: number;
}

/** What the call of an ended conversation is made of, besides its messages. */
export interface EndedConversation {
  agentId: number;
  agentName: string;
  agentVersion: number | null;
  replyLanguage: string;
  channel: ConversationChannel;
  callType: ConversationCallType;
  website: string;
  name: string;
  phone: string;
  isTest: boolean;
  startedAt: Date;
  endedAt: Date;
  /** A phone call's: when its media stream connected (the call was answered); null otherwise. */
  answeredAt: Date | null;
}

/** An active conversation that is idle. */
export interface IdleConversation {
  accountId: number;
  id: string;
}

/** The limits a visitor's message is checked against, in the one statement that accepts it. */
export interface TurnLimits {
  maxVisitorMessages: number;
  idleSeconds: number;
  /** A reply in progress for longer than this is taken as abandoned (its instance died). */
  staleReplySeconds: number;
}

const EXAMPLE_ID = '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90';
const EXAMPLE_HASH = 'a'.repeat(64);
const EXAMPLE_TOOL_ENTRY = 'book_table {"people":2} → {"confirmed":true}';
const EXAMPLE_LATENCY: TurnLatency = { endOfTurn: 700, transcription: 310.2, firstToken: 240.6, firstAudio: 120.4, total: 1_412.5 };
const EXAMPLE_LIMITS: TurnLimits = { maxVisitorMessages: 100, idleSeconds: 300, staleReplySeconds: 45 };
const EXAMPLE_CONVERSATION: NewConversation = {
  id: EXAMPLE_ID,
  tokenHash: EXAMPLE_HASH,
  agentId: 2,
  agentName: 'Reception',
  replyLanguage: 'hi-IN',
  agentVersion: 3,
  channel: 'web-widget',
  callType: 'web',
  website: 'www.example.com',
  siteId: 3,
  allowedDomain: '*.example.com',
  name: 'Priya Sharma',
  phone: '+91-98765-43210',
  isTest: false,
};

/** A conversation's state that a visitor's message changes (is it still open to this message?). */
const IDLE = `last_message_at <= now() - make_interval(secs => $IDLE)`;
const REPLYING = `replying_since > now() - make_interval(secs => $STALE)`;
const withLimits = (sql: string, idle: string, stale: string) => sql.replaceAll('$IDLE', idle).replaceAll('$STALE', stale);

/**
 * Joined into the two statements of every message (accepting it, recording the reply): their commits do not
 * wait for the WAL to reach the disk (`synchronous_commit = off` for that transaction only, set from inside the
 * statement, which is its own transaction). A flush that the disk holds up for tens of milliseconds then no
 * longer holds up every message committing meanwhile. The price, as PostgreSQL documents it: a crash of the
 * database server (not of the service) can lose the turns of its last moments (at most 3 × `wal_writer_delay`,
 * 600 ms by default), in order and without inconsistency; a conversation whose reply was lost takes messages
 * again once the claim is stale. Everything else (the call a conversation becomes, API writes, the webhooks'
 * outbox) commits synchronously, but for the renewal of a voice socket's lease (VoiceLeasesRepository.renew).
 */
export const ASYNCHRONOUS_COMMIT = `CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous_commit`;

/**
 * ConversationsRepository.acceptMessage's statement ($5 the idle seconds, $6 the stale-reply seconds). The agent is
 * read first, with the conversation: a message to a conversation whose agent was deleted is refused (410) like
 * any other, so it is not recorded and never reaches the call the conversation becomes.
 */
const ACCEPT_MESSAGE = withLimits(
  `WITH target AS (
     SELECT account_id, id, agent_id, status, allowed_domain, site_id, visitor_message_count, channel, phone, name, ${IDLE} AS idle,
            coalesce(${REPLYING}, false) AS replying, ${answeringVersionJson('conversation.account_id', 'conversation.agent_id', 'conversation.agent_version')} AS agent
       FROM conversations conversation WHERE id = $1 AND token_hash = $2
   ), turn AS (
     UPDATE conversations c
        SET message_count = c.message_count + 1, visitor_message_count = c.visitor_message_count + 1,
            last_message_at = now(), replying_since = now()
       FROM target
      WHERE c.account_id = target.account_id AND c.id = target.id AND target.agent IS NOT NULL
        AND c.status = 'active' AND c.visitor_message_count < $4
        AND NOT (${IDLE.replaceAll('last_message_at', 'c.last_message_at')})
        AND (c.replying_since IS NULL OR NOT (${REPLYING.replaceAll('replying_since', 'c.replying_since')}))
      RETURNING c.account_id, c.id, c.message_count - 1 AS seq, c.last_message_at
   ), message AS (
     INSERT INTO conversation_messages (account_id, conversation_id, seq, speaker, text, at, start_seconds)
     SELECT account_id, id, seq, 'user', $3, last_message_at, $8 FROM turn
   )
   SELECT target.account_id AS "accountId", target.id, target.agent_id AS "agentId", target.status, target.idle,
          target.allowed_domain AS "allowedDomain", target.site_id AS "siteId", target.visitor_message_count AS "visitorMessageCount", target.replying,
          target.channel, target.phone, target.name,
          turn.seq,
          (SELECT coalesce(json_agg(json_build_object('speaker', recent.speaker, 'text', recent.text) ORDER BY recent.seq), '[]')
             FROM (SELECT seq, speaker, text FROM conversation_messages m
                    WHERE m.account_id = target.account_id AND m.conversation_id = target.id AND m.speaker <> 'tool'
                    ORDER BY seq DESC LIMIT $7) recent) AS history,
          target.agent
     FROM target LEFT JOIN turn ON true ${ASYNCHRONOUS_COMMIT}`,
  '$5',
  '$6',
);

/**
 * Every query of the conversations and their messages. Account-scoped methods take the account id first; the
 * bearer routes first find the conversation by id and token hash (the one unscoped lookup), then go on scoped.
 */
@Injectable()
export class ConversationsRepository {
  constructor(private readonly db: Database) {}

  /** A new conversation, in `sql`'s transaction (with its greeting). */
  @AccountQuery([1, EXAMPLE_CONVERSATION])
  async insert(accountId: number, conversation: NewConversation, sql: Sql = this.db): Promise<{ startedAt: Date }> {
    const c = conversation;
    const [row] = await sql.query<{ startedAt: Date }>(
      `INSERT INTO conversations (account_id, id, token_hash, agent_id, agent_name, reply_language, channel, website, allowed_domain, name, phone, is_test, site_id, call_type, agent_version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING started_at AS "startedAt"`,
      [
        accountId,
        c.id,
        c.tokenHash,
        c.agentId,
        c.agentName,
        c.replyLanguage,
        c.channel,
        c.website,
        c.allowedDomain,
        c.name,
        c.phone,
        c.isTest,
        c.siteId,
        c.callType,
        c.agentVersion,
      ],
    );
    return row;
  }

  /**
   * The active conversations of the account, of its site `siteId` (0 without one), and on the phone, for the caps on a new one:
   * counted under the account's lock of conversation starts, held to the end of `sql`'s transaction (the start's),
   * so that the count, a statement later, sees every conversation a concurrent start made: two starts cannot both
   * take the last place, whichever instance runs them. From IDX_conversations_active_site.
   */
  @AccountQuery([1, 3])
  async countActive(accountId: number, siteId: number | null, sql: Sql = this.db): Promise<ActiveConversations> {
    await sql.query(
      `SELECT pg_advisory_xact_lock(hashtext('conversation-starts'), caller.account_id) FROM (SELECT $1::int AS account_id) AS caller WHERE caller.account_id = $1`,
      [accountId],
    );
    const [counts] = await sql.query<ActiveConversations>(
      `SELECT count(*)::int AS account, (count(*) FILTER (WHERE site_id = $2))::int AS site, (count(*) FILTER (WHERE channel = 'phone'))::int AS phone
         FROM conversations WHERE account_id = $1 AND status = 'active'`,
      [accountId, siteId],
    );
    return counts;
  }

  /** The agent's greeting, the first message of a conversation just inserted in `sql`'s transaction. */
  @AccountQuery([1, EXAMPLE_ID, 'नमस्ते! मैं आपकी कैसे मदद कर सकती हूँ?'])
  async insertGreeting(accountId: number, id: string, text: string, sql: Sql = this.db): Promise<void> {
    await sql.query(
      `WITH first AS (
         UPDATE conversations SET message_count = 1 WHERE account_id = $1 AND id = $2 AND message_count = 0 RETURNING account_id, id, started_at
       )
       INSERT INTO conversation_messages (account_id, conversation_id, seq, speaker, text, at) SELECT account_id, id, 0, 'agent', $3, started_at FROM first`,
      [accountId, id, text],
    );
  }

  /** The greeting's place in a spoken call's recording, and its text when it was cut off (null: unchanged); the first time only. */
  @AccountQuery([1, EXAMPLE_ID, 'नमस्ते! मैं', 0])
  async recordGreetingSpoken(accountId: number, id: string, heardText: string | null, startSeconds: number): Promise<void> {
    await this.db.query(
      `UPDATE conversation_messages SET text = coalesce($3, text), start_seconds = $4
        WHERE account_id = $1 AND conversation_id = $2 AND seq = 0 AND speaker = 'agent' AND start_seconds IS NULL`,
      [accountId, id, heardText, startSeconds],
    );
  }

  @UnscopedQuery('the bearer routes know only the conversation id and its token: this finds the account', [EXAMPLE_ID, EXAMPLE_HASH, 300])
  async findByToken(id: string, tokenHash: string, idleSeconds: number): Promise<ConversationAccess | undefined> {
    const [row] = await this.db.query<ConversationAccess>(
      `SELECT account_id AS "accountId", id, agent_id AS "agentId", status, status = 'active' AND ${IDLE.replace('$IDLE', '$3')} AS idle,
              allowed_domain AS "allowedDomain", site_id AS "siteId"
         FROM conversations WHERE id = $1 AND token_hash = $2`,
      [id, tokenHash, idleSeconds],
    );
    return row;
  }

  @UnscopedQuery('a CORS preflight carries no token; it reads only which origins may call the conversation', [EXAMPLE_ID])
  async findCorsRule(id: string): Promise<ConversationCorsRule | undefined> {
    const [row] = await this.db.query<ConversationCorsRule>(`SELECT allowed_domain AS "allowedDomain" FROM conversations WHERE id = $1`, [
      id,
    ]);
    return row;
  }

  /**
   * A visitor's message, in one statement: finds the conversation by id and token hash and accepts the message
   * (records it, and marks a reply in progress) only while the conversation is active, not idle, its agent not
   * deleted, under the message limit and not already producing a reply; with the messages before it (at most `historyLimit`). The
   * row's state comes back either way, so that a refusal can say why without another query, and so does the
   * agent that is to answer (one round trip for all a reply needs). Undefined for a wrong token. Everything after
   * the lookup is keyed by the row it found (its account_id and id). Prepared: its plan is lookups by key.
   */
  @UnscopedQuery('the bearer routes know only the conversation id and its token: the row they name is the scope of everything else', [
    EXAMPLE_ID,
    EXAMPLE_HASH,
    'Do you deliver on Sundays?',
    EXAMPLE_LIMITS,
    19,
  ])
  async acceptMessage(
    id: string,
    tokenHash: string,
    text: string,
    limits: TurnLimits,
    historyLimit: number,
    startSeconds: number | null = null,
  ): Promise<MessageAcceptance | undefined> {
    const [row] = await this.db.query<MessageAcceptance>(
      ACCEPT_MESSAGE,
      [id, tokenHash, text, limits.maxVisitorMessages, limits.idleSeconds, limits.staleReplySeconds, historyLimit, startSeconds],
      { prepared: true },
    );
    return row;
  }

  /**
   * Records the reply to the visitor's message `seq` and ends the reply in progress, in one statement: the entries of
   * the tools the reply called first (`toolEntries`, in order), then the reply (with `latencyMs`, a spoken reply's
   * timing, when given). Nothing is recorded (false) if the conversation ended meanwhile, or if this reply's claim was
   * taken over as stale. Prepared and committed asynchronously, as acceptMessage: the two statements of every message.
   */
  @AccountQuery(
    { name: 'a reply', params: [1, EXAMPLE_ID, 3, 'Yes, every day from 9 to 6.'] },
    { name: 'after tool calls', params: [1, EXAMPLE_ID, 3, 'Booked for two at 7:30.', null, [EXAMPLE_TOOL_ENTRY]] },
    { name: 'spoken', params: [1, EXAMPLE_ID, 3, 'Yes, every day from 9 to 6.', 4.52, [], EXAMPLE_LATENCY] },
  )
  async recordReply(
    accountId: number,
    id: string,
    seq: number,
    text: string,
    startSeconds: number | null = null,
    toolEntries: string[] = [],
    latencyMs: TurnLatency | null = null,
  ): Promise<boolean> {
    const rows = await this.db.query(
      `WITH turn AS (
         UPDATE conversations SET message_count = message_count + 1 + cardinality($6::text[]), last_message_at = now(), replying_since = NULL
          WHERE account_id = $1 AND id = $2 AND status = 'active' AND message_count = $3 + 1
          RETURNING account_id, id, last_message_at
       )
       INSERT INTO conversation_messages (account_id, conversation_id, seq, speaker, text, at, start_seconds, latency_ms)
       SELECT account_id, id, $3 + entry.n, 'tool', entry.text, last_message_at, NULL::double precision, NULL::jsonb
         FROM turn, unnest($6::text[]) WITH ORDINALITY AS entry(text, n)
       UNION ALL
       SELECT account_id, id, $3 + 1 + cardinality($6::text[]), 'agent', $4, last_message_at, $5::double precision, $7::jsonb
         FROM turn ${ASYNCHRONOUS_COMMIT}
       RETURNING seq`,
      [accountId, id, seq, text, startSeconds, toolEntries, latencyMs === null ? null : JSON.stringify(latencyMs)],
      { prepared: true },
    );
    return rows.length > 0;
  }

  /**
   * Ends the reply in progress to message `seq` without recording one (it was interrupted before a word was heard);
   * the entries of the tools it called are recorded all the same (their requests were sent).
   */
  @AccountQuery(
    { name: 'a reply', params: [1, EXAMPLE_ID, 1] },
    { name: 'after tool calls', params: [1, EXAMPLE_ID, 1, [EXAMPLE_TOOL_ENTRY]] },
  )
  async abandonReply(accountId: number, id: string, seq: number, toolEntries: string[] = []): Promise<void> {
    await this.db.query(
      `WITH turn AS (
         UPDATE conversations SET message_count = message_count + cardinality($4::text[]), last_message_at = now(), replying_since = NULL
          WHERE account_id = $1 AND id = $2 AND status = 'active' AND message_count = $3 + 1
          RETURNING account_id, id, last_message_at
       )
       INSERT INTO conversation_messages (account_id, conversation_id, seq, speaker, text, at, start_seconds)
       SELECT account_id, id, $3 + entry.n, 'tool', entry.text, last_message_at, NULL FROM turn, unnest($4::text[]) WITH ORDINALITY AS entry(text, n)`,
      [accountId, id, seq, toolEntries],
    );
  }

  /**
   * Renews the claim of the reply in progress to message `seq` (a reply that calls tools may outlast the time after
   * which a claim is taken as abandoned): false when it is no longer this reply's (taken over, or the conversation ended).
   */
  @AccountQuery([1, EXAMPLE_ID, 1])
  async renewReply(accountId: number, id: string, seq: number): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE conversations SET replying_since = now()
        WHERE account_id = $1 AND id = $2 AND status = 'active' AND message_count = $3 + 1 AND replying_since IS NOT NULL RETURNING id`,
      [accountId, id, seq],
    );
    return rows.length > 0;
  }

  /** Every message, in order; inside `sql`'s transaction when given. */
  @AccountQuery([1, EXAMPLE_ID])
  messages(accountId: number, id: string, sql: Sql = this.db): Promise<MessageRow[]> {
    return sql.query<MessageRow>(
      `SELECT speaker, text, at, start_seconds AS "startSeconds", latency_ms AS "latencyMs"
         FROM conversation_messages WHERE account_id = $1 AND conversation_id = $2 ORDER BY seq`,
      [accountId, id],
    );
  }

  /**
   * Ends an active conversation (only if idle, when `idle` is given), in `sql`'s transaction: the conditional
   * UPDATE is what makes an end happen once, whoever tries at the same time. Undefined when nothing was ended.
   */
  @AccountQuery(
    { name: 'on request', params: [1, EXAMPLE_ID, undefined] },
    { name: 'when idle', params: [1, EXAMPLE_ID, { idleSeconds: 300, staleReplySeconds: 45 }] },
  )
  async end(
    accountId: number,
    id: string,
    idle: Pick<TurnLimits, 'idleSeconds' | 'staleReplySeconds'> | undefined,
    sql: Sql = this.db,
  ): Promise<EndedConversation | undefined> {
    const idleOnly = idle ? withLimits(` AND ${IDLE} AND (replying_since IS NULL OR NOT (${REPLYING}))`, '$3', '$4') : '';
    const [row] = await sql.query<EndedConversation>(
      `UPDATE conversations SET status = 'ended', ended_at = now(), replying_since = NULL
        WHERE account_id = $1 AND id = $2 AND status = 'active'${idleOnly}
        RETURNING agent_id AS "agentId", agent_name AS "agentName", agent_version AS "agentVersion", reply_language AS "replyLanguage", channel, call_type AS "callType",
                  website, name, phone, is_test AS "isTest", started_at AS "startedAt", ended_at AS "endedAt",
                  (SELECT pc.stream_connected_at FROM phone_calls pc
                    WHERE pc.account_id = conversations.account_id AND pc.conversation_id = conversations.id) AS "answeredAt"`,
      idle ? [accountId, id, idle.idleSeconds, idle.staleReplySeconds] : [accountId, id],
    );
    return row;
  }

  /** Replaces the conversation's bearer token (the previous one opens nothing from now on); false when it is not active. */
  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_HASH])
  async replaceToken(accountId: number, id: string, tokenHash: string): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE conversations SET token_hash = $3 WHERE account_id = $1 AND id = $2 AND status = 'active' RETURNING id`,
      [accountId, id, tokenHash],
    );
    return rows.length > 0;
  }

  /** Erasure of the call the conversation became, in its transaction: the conversation and its messages (they cascade). */
  @AccountQuery([1, EXAMPLE_ID])
  async deleteForErasure(accountId: number, id: string, sql: Sql = this.db): Promise<void> {
    await sql.query(`DELETE FROM conversations WHERE account_id = $1 AND id = $2`, [accountId, id]);
  }

  /** The conversation's status now (after an attempt to end it that another instance may have beaten). */
  @AccountQuery([1, EXAMPLE_ID])
  async status(accountId: number, id: string): Promise<ConversationStatus | undefined> {
    const [row] = await this.db.query<{ status: ConversationStatus }>(
      `SELECT status FROM conversations WHERE account_id = $1 AND id = $2`,
      [accountId, id],
    );
    return row?.status;
  }

  @UnscopedQuery("the idle sweep looks at every account's active conversations at once", [300, 45, 200])
  idleConversations(idleSeconds: number, staleReplySeconds: number, limit: number): Promise<IdleConversation[]> {
    return this.db.query<IdleConversation>(
      withLimits(
        `SELECT account_id AS "accountId", id FROM conversations
          WHERE status = 'active' AND ${IDLE} AND (replying_since IS NULL OR NOT (${REPLYING}))
          ORDER BY last_message_at LIMIT $3`,
        '$1',
        '$2',
      ),
      [idleSeconds, staleReplySeconds, limit],
    );
  }

  /**
   * When to check an active conversation for idleness next: its idle time, or in a second when that has
   * passed (a reply was in progress: the end waits for it). Undefined once it has ended.
   */
  @AccountQuery([1, EXAMPLE_ID, 300])
  async nextIdleCheck(accountId: number, id: string, idleSeconds: number): Promise<Date | undefined> {
    const [row] = await this.db.query<{ at: Date }>(
      `SELECT greatest(last_message_at + make_interval(secs => $3), now() + interval '1 second') AS at
         FROM conversations WHERE account_id = $1 AND id = $2 AND status = 'active'`,
      [accountId, id, idleSeconds],
    );
    return row?.at;
  }
}
