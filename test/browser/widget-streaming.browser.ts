import { bearer } from '../conversation-helpers';
import { FakeLlm, startFakeLlm } from '../fake-llm';
import { TestAccount } from '../helpers';
import { startWidgetHarness, widget, WidgetHarness } from './harness';
import { recordReplyTexts, replyTexts, savedConversation } from './page-scripts';

/**
 * The widget with a provider: a Chat Completions server on loopback (test/fake-llm.ts) whose stream the test
 * holds open, so that the reply is seen in the page while it is still being produced; and the widget rate limit,
 * low here, so that the visitor meets a 429.
 */
describe('the widget with a streaming provider, in Chromium', () => {
  let llm: FakeLlm;
  let harness: WidgetHarness;
  let owner: TestAccount;
  let siteKey: string;

  beforeAll(async () => {
    llm = await startFakeLlm();
    harness = await startWidgetHarness({
      llm: { baseUrl: llm.url, apiKey: 'sk-test', timeoutMs: 30_000, maxTokens: 256 },
      widgetRateLimit: 5,
    });
    owner = await harness.context.createAccount({ name: 'Acme Saree House' });
    const agent = (await harness.context.as(owner).post('/agents').send({ name: 'Asha', language: 'en-IN' }).expect(201)).body;
    ({ siteKey } = await harness.createSite(owner, 'shop', {
      name: 'Storefront',
      agentId: agent.id,
      allowedDomain: `localhost:${harness.hostPort}`,
      widgetGreeting: 'Hello!',
      widgetMode: 'chat',
      widgetAskName: false,
      widgetAskPhone: false,
    }));
  });

  afterAll(async () => {
    await harness?.close();
    await llm?.close();
  });

  async function startChat() {
    const { page } = await harness.open('/site/shop');
    await widget(page).launcher.click();
    await widget(page).start.click();
    await widget(page).input.waitFor();
    return page;
  }

  it('shows the reply while the provider is still producing it, piece by piece, and announces it once complete', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    llm.behave({ kind: 'stream', pieces: ['Yes, ', 'we deliver ', 'on Sundays.'], hold });
    const page = await startChat();
    const parts = widget(page);
    try {
      await recordReplyTexts(page);
      await parts.input.fill('Do you deliver on Sundays?');
      await parts.input.press('Enter');

      // The provider has sent every piece but not finished: the page shows them, the reply is not complete yet.
      await parts.agentMessages.filter({ hasText: 'Yes, we deliver on Sundays.' }).waitFor();
      expect(await replyTexts(page)).toEqual(['Yes, ', 'Yes, we deliver ', 'Yes, we deliver on Sundays.']);
      expect(await parts.announcer.textContent()).toBe('Asha: Hello!'); // the greeting, not yet the reply
      expect(await parts.send.getAttribute('aria-disabled')).toBe('true');
    } finally {
      release();
    }
    await parts.announcer.filter({ hasText: 'Asha: Yes, we deliver on Sundays.' }).waitFor({ state: 'attached' });
    expect(await parts.send.getAttribute('aria-disabled')).toBe('false');
    await page.close();
  });

  it('tells the visitor to wait, in words, when the service answers 429', async () => {
    llm.behave({ kind: 'stream', pieces: ['Noted.'] });
    const page = await startChat();
    const parts = widget(page);
    // One message first: the browser then holds the route's CORS preflight (Access-Control-Max-Age), which the
    // rate limit would refuse as well, and a refused preflight is all a page can see of it.
    await parts.input.fill('First question');
    await parts.input.press('Enter');
    await parts.announcer.filter({ hasText: 'Noted.' }).waitFor({ state: 'attached' });

    const { conversationId, token } = (await savedConversation(page, siteKey))!;
    const statuses: number[] = [];
    while (!statuses.includes(429) && statuses.length < 10) {
      statuses.push(
        (await harness.context.http.post(`/conversations/${conversationId}/messages`).set(bearer(token)).send({ text: 'More' })).status,
      );
    }
    expect(statuses.at(-1)).toBe(429);

    await parts.input.fill('Second question');
    await parts.input.press('Enter');
    await parts.error.filter({ hasText: /^Too many messages in a short time\. Please wait \d+ seconds and try again\.$/ }).waitFor();
    expect(await parts.input.inputValue()).toBe('Second question');
    await page.close();
  });
});
