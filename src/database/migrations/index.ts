// Every migration, oldest first. `npm run migration:generate -- Name` rewrites this list.
import { Initial1795327392008 } from './1795327392008-Initial';
import { Agents1795327686619 } from './1795327686619-Agents';
import { KnowledgeBases1795327849133 } from './1795327849133-KnowledgeBases';
import { Calls1795327895093 } from './1795327895093-Calls';
import { WidgetSites1795328182287 } from './1795328182287-WidgetSites';
import { CallsSearchStatistics1795335600000 } from './1795335600000-CallsSearchStatistics';
import { CallsNameSearchKey1795342800000 } from './1795342800000-CallsNameSearchKey';
import { Conversations1795429061098 } from './1795429061098-Conversations';
import { KnowledgeRetrieval1795429671494 } from './1795429671494-KnowledgeRetrieval';

export const MIGRATIONS = [Initial1795327392008, Agents1795327686619, KnowledgeBases1795327849133, Calls1795327895093, WidgetSites1795328182287, CallsSearchStatistics1795335600000, CallsNameSearchKey1795342800000, Conversations1795429061098, KnowledgeRetrieval1795429671494];
