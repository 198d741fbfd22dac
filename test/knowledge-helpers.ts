import { eventually, TestAccount, TestContext } from './helpers';

/** A knowledge-base source as the API returns it (the fields the tests read). */
export interface SourceView {
  id: number;
  name: string;
  type: string;
  content: string;
  status: string;
  error: string;
  fileName: string;
  contentType: string;
  bytes: number;
}

/** The source once its indexing (a fetch, a file's reading) has ended: no longer pending, read through the API. */
export async function settledSource(
  context: TestContext,
  account: TestAccount,
  kbId: number,
  sourceId: number,
  timeoutMs = 60_000,
): Promise<SourceView> {
  return eventually(async () => {
    const sources = (await context.as(account).get(`/knowledge-bases/${kbId}/sources`).expect(200)).body as SourceView[];
    const source = sources.find((candidate) => candidate.id === sourceId);
    if (!source) throw new Error(`source ${sourceId} is not listed`);
    return source.status === 'pending' ? undefined : source;
  }, timeoutMs);
}
