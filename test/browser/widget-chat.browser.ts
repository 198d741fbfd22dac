import * as fs from 'node:fs';
import { Page } from 'playwright-core';
import { bearer } from '../conversation-helpers';
import { TestAccount } from '../helpers';
import { createShopAgent, KNOWLEDGE, screenshotPath, startWidgetHarness, widget, WidgetHarness } from './harness';
import {
  conversationStyles,
  externalStart,
  fetchFromPage,
  focusedInWidget,
  focusOutline,
  recordReplyTexts,
  replyTexts,
  savedConversation,
  takeOverStart,
} from './page-scripts';

/**
 * The widget's chat in Chromium, with the built-in answerer (no provider): the agent answers from its knowledge
 * base, word by word. The whole chat and its call, a reload, the keyboard alone, the errors, the opt-out.
 */
/** The API guide's screenshot (screenshotPath). */
const SCREENSHOT = screenshotPath('widget-screenshot.png');
const GREETING = 'Namaste! Questions about delivery or returns? Ask me.';
const DELIVERY_QUESTION = 'How long does delivery take?';
const RETURNS_QUESTION = 'Can I return a saree?';

type Speaker = 'agent' | 'user';

describe("the widget's chat in Chromium", () => {
  let harness: WidgetHarness;
  let owner: TestAccount;
  let siteKey: string;

  beforeAll(async () => {
    // A limit above the 100 messages one test sends to one conversation.
    harness = await startWidgetHarness({ widgetRateLimit: 1_000 });
    owner = await harness.context.createAccount({ name: 'Acme Saree House' });
    const agent = await createShopAgent(harness.context, owner);
    ({ siteKey } = await harness.createSite(owner, 'shop', {
      name: 'Storefront',
      agentId: agent.id,
      allowedDomain: `localhost:${harness.hostPort}`,
      widgetLabel: 'Chat with Asha',
      widgetAvatar: 'female',
      widgetGreeting: GREETING,
      widgetMode: 'chat',
      widgetAskName: true,
      widgetAskPhone: false,
    }));
  });

  afterAll(() => harness?.close());

  /** Opens the shop's page and starts a chat as Priya (clicking). */
  async function startChat(): Promise<{ page: Page; errors: string[] }> {
    const opened = await harness.open('/site/shop');
    const parts = widget(opened.page);
    await parts.launcher.click();
    await opened.page.locator('voice-agent-widget input[name="name"]').fill('Priya Sharma');
    await parts.start.click();
    await parts.input.waitFor();
    return opened;
  }

  /** The transcript the widget shows. */
  const shown = (page: Page) =>
    page.locator('voice-agent-widget .messages .message').evaluateAll((items) =>
      items.map((item): { speaker: Speaker; text: string | null } => ({
        speaker: item.className.includes('user') ? 'user' : 'agent',
        text: item.querySelector('.text')!.textContent,
      })),
    );

  /** Waits until the live region announces this reply (announced once complete, so the reply is whole). */
  const replied = (page: Page, reply: string) => widget(page).announcer.filter({ hasText: reply }).waitFor({ state: 'attached' });

  /** Types the question and presses Enter; resolves once the reply is complete. */
  async function ask(page: Page, question: string, reply: string): Promise<void> {
    await widget(page).input.fill(question);
    await widget(page).input.press('Enter');
    await replied(page, reply);
  }

  const turns = (...pairs: [Speaker, string][]) => pairs.map(([speaker, text]) => ({ speaker, text }));

  it('holds a whole chat: the greeting, two questions answered as the replies stream, End; then the call with its transcript', async () => {
    const { page, errors } = await startChat();
    const parts = widget(page);
    expect(await shown(page)).toEqual(turns(['agent', GREETING]));
    expect(await focusedInWidget(page)).toBe('textarea');
    const { conversationId } = (await savedConversation(page, siteKey))!;

    await recordReplyTexts(page);
    await ask(page, DELIVERY_QUESTION, KNOWLEDGE.delivery);
    await ask(page, RETURNS_QUESTION, KNOWLEDGE.returns);
    const transcript = turns(
      ['agent', GREETING],
      ['user', DELIVERY_QUESTION],
      ['agent', KNOWLEDGE.delivery],
      ['user', RETURNS_QUESTION],
      ['agent', KNOWLEDGE.returns],
    );
    expect(await shown(page)).toEqual(transcript);
    // Each reply appeared piece by piece: several growing prefixes of it before the whole.
    const texts = await replyTexts(page);
    for (const reply of [KNOWLEDGE.delivery, KNOWLEDGE.returns]) {
      const partial = texts.filter((text) => text.length > 0 && text.length < reply.length && reply.startsWith(text));
      expect(new Set(partial).size).toBeGreaterThanOrEqual(2);
    }
    await page.mouse.move(0, 0);
    await page.screenshot({ path: SCREENSHOT });
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);

    await parts.end.click();
    await parts.ended.filter({ hasText: 'The chat has ended. Thank you!' }).waitFor();
    expect(await focusedInWidget(page)).toBe('restart');
    expect(await savedConversation(page, siteKey)).toBeNull();
    expect(errors).toEqual([]);
    await page.close();

    const calls = (await harness.context.as(owner).get('/calls').expect(200)).body as { id: string }[];
    expect(calls.find((call) => call.id === conversationId)).toMatchObject({
      name: 'Priya Sharma',
      phone: '',
      channel: 'web-widget',
      callType: 'web',
      callStatus: 'completed',
      website: `localhost:${harness.hostPort}`, // the host of the page's Origin
      agent: 'Asha',
      replyLanguage: 'en-IN',
    });
    const call = (await harness.context.as(owner).get(`/calls/${conversationId}`).expect(200)).body;
    expect(call.transcript).toEqual(transcript);
  });

  it('shows the conversation again after a reload, and forgets it once it has ended', async () => {
    const { page } = await startChat();
    await ask(page, DELIVERY_QUESTION, KNOWLEDGE.delivery);
    const saved = (await savedConversation(page, siteKey))!;

    await page.reload();
    await widget(page).panel.waitFor();
    expect(await shown(page)).toEqual(turns(['agent', GREETING], ['user', DELIVERY_QUESTION], ['agent', KNOWLEDGE.delivery]));
    expect(await focusedInWidget(page)).toBeNull(); // a page load does not take the keyboard
    expect(await page.locator('voice-agent-widget .bubble').count()).toBe(0);
    await ask(page, RETURNS_QUESTION, KNOWLEDGE.returns);
    expect(await savedConversation(page, siteKey)).toEqual(saved);

    await harness.context.http.post(`/conversations/${saved.conversationId}/end`).set(bearer(saved.token)).expect(204);
    await page.reload();
    await widget(page).launcher.waitFor();
    expect(await savedConversation(page, siteKey)).toBeNull();
    await expect(widget(page).panel.isVisible()).resolves.toBe(false);
    await widget(page).launcher.click();
    await expect(widget(page).start.isVisible()).resolves.toBe(true);
    await page.close();
  });

  it('works with the keyboard alone, with visible focus, and announces the completed reply', async () => {
    const { page } = await harness.open('/site/shop');
    await widget(page).launcher.waitFor();
    for (let presses = 0; presses < 6 && (await focusedInWidget(page)) !== 'launcher'; presses++) await page.keyboard.press('Tab');
    expect(await focusedInWidget(page)).toBe('launcher');
    expect(await focusOutline(page)).toBe('solid 3px');
    await page.keyboard.press('Enter');
    expect(await focusedInWidget(page)).toBe('input'); // the name field
    await page.keyboard.type('Priya Sharma');
    await page.keyboard.press('Enter');
    await widget(page).input.waitFor();
    expect(await focusedInWidget(page)).toBe('textarea');

    await page.keyboard.type('First line');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('second line');
    expect(await widget(page).input.inputValue()).toBe('First line\nsecond line');
    expect(await widget(page).messages.count()).toBe(1); // the greeting: nothing sent
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(DELIVERY_QUESTION);
    await page.keyboard.press('Enter');
    await replied(page, KNOWLEDGE.delivery);
    expect(await widget(page).announcer.textContent()).toBe(`Asha: ${KNOWLEDGE.delivery}`);
    expect(await widget(page).announcer.getAttribute('aria-live')).toBe('polite');
    expect(await focusedInWidget(page)).toBe('textarea');

    await page.keyboard.press('Tab');
    expect(await focusedInWidget(page)).toBe('send');
    await page.keyboard.press('Tab');
    expect(await focusedInWidget(page)).toBe('end');
    expect(await focusOutline(page)).toBe('solid 3px');
    await page.keyboard.press('Enter');
    await widget(page).ended.waitFor();
    expect(await focusedInWidget(page)).toBe('restart');
    await page.keyboard.press('Escape');
    expect(await focusedInWidget(page)).toBe('launcher');
    await page.close();
  });

  it('says in words what went wrong: no network, 100 messages (409), the conversation ended (410)', async () => {
    const { page } = await startChat();
    const parts = widget(page);
    const { conversationId, token } = (await savedConversation(page, siteKey))!;

    await page.context().setOffline(true);
    await parts.input.fill(DELIVERY_QUESTION);
    await parts.input.press('Enter');
    await parts.error.filter({ hasText: 'Could not reach the assistant. Check your connection and try again.' }).waitFor();
    expect(await parts.input.inputValue()).toBe(DELIVERY_QUESTION); // back in the box, to send again
    expect(await shown(page)).toEqual(turns(['agent', GREETING]));
    await page.context().setOffline(false);
    await parts.input.press('Enter');
    await replied(page, KNOWLEDGE.delivery);
    await expect(parts.error.isVisible()).resolves.toBe(false);

    for (let sent = 1; sent < 100; sent++) {
      await harness.context.http
        .post(`/conversations/${conversationId}/messages`)
        .set(bearer(token))
        .send({ text: `Question ${sent}` })
        .expect(200);
    }
    await parts.input.fill(RETURNS_QUESTION);
    await parts.input.press('Enter');
    await parts.error.filter({ hasText: 'This conversation has reached its limit of 100 visitor messages' }).waitFor();
    expect(await parts.input.inputValue()).toBe(RETURNS_QUESTION);

    await harness.context.http.post(`/conversations/${conversationId}/end`).set(bearer(token)).expect(204);
    await parts.input.press('Enter');
    await parts.ended.filter({ hasText: 'This conversation has ended.' }).waitFor();
    expect(await focusedInWidget(page)).toBe('restart');
    expect(await savedConversation(page, siteKey)).toBeNull();
    await page.close();
  });

  it('takes up to 2,000 characters as the service counts them (emoji are one each), and no more', async () => {
    const { page } = await startChat();
    const parts = widget(page);
    await parts.input.fill('😀'.repeat(2_001));
    const typed = await parts.input.inputValue();
    expect(Array.from(typed)).toHaveLength(2_000); // 4,000 UTF-16 units: maxLength would have cut it at 1,000
    await parts.input.press('Enter');
    await page.locator('voice-agent-widget .messages .message').nth(2).waitFor(); // the greeting, the message, the reply
    expect((await shown(page))[1]).toEqual({ speaker: 'user', text: typed });
    await expect(parts.error.isVisible()).resolves.toBe(false);
    await page.close();
  });

  it("keeps the host page's styles out of the conversation", async () => {
    const { page } = await startChat();
    await ask(page, DELIVERY_QUESTION, KNOWLEDGE.delivery);
    await widget(page).end.focus();
    expect(await conversationStyles(page)).toEqual({
      list: ['none', '0px', 'rgba(0, 0, 0, 0)'],
      reply: ['0px', 'rgb(238, 240, 251)', 'none', false],
      question: ['rgb(67, 56, 202)', 'rgb(255, 255, 255)', 'normal'],
      input: ['1px', '15px'],
      end: ['rgb(255, 255, 255)', 'none'],
    });
    await page.close();
  });

  it("leaves the conversation to the page's own runtime when its start listener calls preventDefault()", async () => {
    const { page } = await harness.open('/site/shop');
    const requested: string[] = [];
    page.on('request', (request) => requested.push(new URL(request.url()).pathname));
    await takeOverStart(page);
    await widget(page).launcher.click();
    await page.locator('voice-agent-widget input[name="name"]').fill('Priya Sharma');
    await widget(page).start.click();
    await widget(page).status.filter({ hasText: 'Starting the chat' }).waitFor();
    expect(await externalStart(page)).toEqual({ siteKey, mode: 'chat', name: 'Priya Sharma', phone: '' });
    await fetchFromPage(page, `http://localhost:${harness.hostPort}/plain`); // every request made before it has been seen
    expect(requested).toContain('/plain');
    expect(requested).not.toContain('/widget/sessions');
    await expect(widget(page).input.isVisible()).resolves.toBe(false);
    expect(await savedConversation(page, siteKey)).toBeNull();
    await page.close();
  });
});
