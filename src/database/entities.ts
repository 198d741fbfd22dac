import { Agent } from '../agents/agent.entity';
import { KnowledgeBaseSource } from '../knowledge-bases/knowledge-base-source.entity';
import { KnowledgeBase } from '../knowledge-bases/knowledge-base.entity';
import { KnowledgePassage } from '../knowledge-bases/knowledge-passage.entity';
import { KnowledgeCorpus, KnowledgeTokenStat } from '../knowledge-bases/knowledge-stats.entity';
import { KnowledgeFileChunk } from '../knowledge-bases/knowledge-file-chunk.entity';
import { AgentKnowledgeBase } from '../agents/agent-knowledge-base.entity';
import { AgentTool } from '../agents/agent-tool.entity';
import { AgentVersion } from '../agent-versions/agent-version.entity';
import { Tool } from '../tools/tool.entity';
import { Account } from '../auth/account.entity';
import { Call } from '../calls/call.entity';
import { ApiKey } from '../auth/api-key.entity';
import { WidgetSite } from '../widget-sites/widget-site.entity';
import { PhoneNumber } from '../telephony/phone-number.entity';
import { PhoneCall, PhoneCallStatus } from '../telephony/phone-call.entity';
import { Webhook } from '../webhooks/webhook.entity';
import { WebhookEvent } from '../webhooks/webhook-event.entity';
import { WebhookOutboxEntry } from '../webhooks/webhook-outbox-entry.entity';
import { WebhookDelivery } from '../webhooks/webhook-delivery.entity';
import { IdempotencyKey } from '../idempotency/idempotency-key.entity';
import { Conversation, ConversationMessage } from '../conversations/conversation.entity';
import { RecordingSegment } from '../voice/recording/recording-segment.entity';

/** Every entity of the application: the app, the CLI, migrations and the drift test all use this list. */
export const ENTITIES = [
  Account,
  ApiKey,
  Agent,
  KnowledgeBase,
  KnowledgeBaseSource,
  KnowledgePassage,
  KnowledgeTokenStat,
  KnowledgeCorpus,
  KnowledgeFileChunk,
  AgentKnowledgeBase,
  Call,
  WidgetSite,
  PhoneNumber,
  PhoneCall,
  PhoneCallStatus,
  Webhook,
  WebhookEvent,
  WebhookOutboxEntry,
  WebhookDelivery,
  IdempotencyKey,
  Conversation,
  ConversationMessage,
  RecordingSegment,
  Tool,
  AgentTool,
  AgentVersion,
];
