// Every migration, oldest first. `npm run migration:generate -- Name` rewrites this list.
import { Initial1795327392008 } from './1795327392008-Initial';
import { Agents1795327686619 } from './1795327686619-Agents';
import { KnowledgeBases1795327849133 } from './1795327849133-KnowledgeBases';
import { Calls1795327895093 } from './1795327895093-Calls';
import { WidgetSites1795328182287 } from './1795328182287-WidgetSites';
import { CallsSearchStatistics1795335600000 } from './1795335600000-CallsSearchStatistics';
import { CallsNameSearchKey1795342800000 } from './1795342800000-CallsNameSearchKey';
import { AllowedDomainLength1795428461087 } from './1795428461087-AllowedDomainLength';
import { CallsCallDateMilliseconds1795428861465 } from './1795428861465-CallsCallDateMilliseconds';
import { Conversations1795429061098 } from './1795429061098-Conversations';
import { KnowledgeRetrieval1795429671494 } from './1795429671494-KnowledgeRetrieval';
import { ApiKeysNotifyRevocation1795430000000 } from './1795430000000-ApiKeysNotifyRevocation';
import { Webhooks1795430249942 } from './1795430249942-Webhooks';
import { CallsUsageIndex1795432000000 } from './1795432000000-CallsUsageIndex';
import { ApiKeysThroughTheApi1795433608172 } from './1795433608172-ApiKeysThroughTheApi';
import { IdempotencyKeys1795433608173 } from './1795433608173-IdempotencyKeys';
import { WebhookEventsRetention1795434000000 } from './1795434000000-WebhookEventsRetention';
import { ErasedCallsConversations1795435000000 } from './1795435000000-ErasedCallsConversations';
import { BlankWidgetGreetings1795435000001 } from './1795435000001-BlankWidgetGreetings';
import { WebhookOutbox1795644318865 } from './1795644318865-WebhookOutbox';
import { WebhookRetryRequested1795650000000 } from './1795650000000-WebhookRetryRequested';
import { ConversationSites1795700000000 } from './1795700000000-ConversationSites';
import { VoiceSockets1795800000000 } from './1795800000000-VoiceSockets';
import { RecordingSegments1795800000001 } from './1795800000001-RecordingSegments';
import { KnowledgeFiles1795900000000 } from './1795900000000-KnowledgeFiles';
import { VoiceLeaseClosing1796000000000 } from './1796000000000-VoiceLeaseClosing';
import { ApiKeysNotifyCreation1796100000000 } from './1796100000000-ApiKeysNotifyCreation';
import { Tools1796243000000 } from './1796243000000-Tools';
import { Telephony1796300000000 } from './1796300000000-Telephony';
import { CallsEndedReason1796300000001 } from './1796300000001-CallsEndedReason';
import { AgentVersions1796400000000 } from './1796400000000-AgentVersions';
import { Latency1796500000000 } from './1796500000000-Latency';

export const MIGRATIONS = [
  Initial1795327392008,
  Agents1795327686619,
  KnowledgeBases1795327849133,
  Calls1795327895093,
  WidgetSites1795328182287,
  CallsSearchStatistics1795335600000,
  CallsNameSearchKey1795342800000,
  AllowedDomainLength1795428461087,
  CallsCallDateMilliseconds1795428861465,
  Conversations1795429061098,
  KnowledgeRetrieval1795429671494,
  ApiKeysNotifyRevocation1795430000000,
  Webhooks1795430249942,
  CallsUsageIndex1795432000000,
  ApiKeysThroughTheApi1795433608172,
  IdempotencyKeys1795433608173,
  WebhookEventsRetention1795434000000,
  ErasedCallsConversations1795435000000,
  BlankWidgetGreetings1795435000001,
  WebhookOutbox1795644318865,
  WebhookRetryRequested1795650000000,
  ConversationSites1795700000000,
  VoiceSockets1795800000000,
  RecordingSegments1795800000001,
  KnowledgeFiles1795900000000,
  VoiceLeaseClosing1796000000000,
  ApiKeysNotifyCreation1796100000000,
  Tools1796243000000,
  Telephony1796300000000,
  CallsEndedReason1796300000001,
  AgentVersions1796400000000,
  Latency1796500000000,
];
