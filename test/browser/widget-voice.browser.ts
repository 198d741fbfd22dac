import { TestAccount } from '../helpers';
import { createShopAgent, KNOWLEDGE, startWidgetHarness, widget, WidgetHarness } from './harness';
import { focusedInWidget, installSpeechStub, removeSpeech, speechLog } from './page-scripts';

/**
 * Voice mode in Chromium: the same conversation, spoken. Headless Chromium cannot hear or speak, so a stub
 * speech recognition and synthesis is put in the page before its scripts (page.addInitScript): it "hears" a
 * sentence and records what is spoken. Without any speech API, voice mode falls back to the text box.
 */
const GREETING = 'Namaste! Ask me about delivery or returns.';
const QUESTION = 'How long does delivery take?';

describe("the widget's voice mode in Chromium", () => {
  let harness: WidgetHarness;
  let owner: TestAccount;

  beforeAll(async () => {
    harness = await startWidgetHarness();
    owner = await harness.context.createAccount({ name: 'Acme Saree House' });
    const agent = await createShopAgent(harness.context, owner);
    await harness.createSite(owner, 'call', {
      name: 'Storefront',
      agentId: agent.id,
      allowedDomain: `localhost:${harness.hostPort}`,
      widgetLabel: 'Talk to Asha',
      widgetGreeting: GREETING,
      widgetMode: 'voice',
      widgetAskName: false,
      widgetAskPhone: false,
    });
  });

  afterAll(() => harness?.close());

  it("speaks the greeting, hears the visitor in the agent's language, sends it, speaks the reply, listens again until stopped", async () => {
    const { page, errors } = await harness.open('/site/call', { init: { script: installSpeechStub, argument: [QUESTION] } });
    const parts = widget(page);
    await parts.launcher.click();
    expect(await parts.start.innerText()).toBe('Start call');
    await parts.start.click();

    await parts.announcer.filter({ hasText: KNOWLEDGE.delivery }).waitFor({ state: 'attached' });
    const transcript = await page.locator('voice-agent-widget .messages .message .text').allTextContents();
    expect(transcript).toEqual([GREETING, QUESTION, KNOWLEDGE.delivery]);
    // After the reply was spoken it listens again (the stub now hears nothing): the indicator shows, and Stop ends it.
    await parts.listening.waitFor();
    expect(await parts.listening.innerText()).toBe('Listening\u2026');
    expect(await parts.mic.innerText()).toBe('Stop listening');
    expect(await speechLog(page)).toEqual({
      listened: ['en-IN', 'en-IN'],
      aborted: 0,
      spoken: [
        { text: GREETING, lang: 'en-IN' },
        { text: KNOWLEDGE.delivery, lang: 'en-IN' },
      ],
    });
    await parts.mic.click();
    await parts.listening.waitFor({ state: 'hidden' });
    expect(await parts.mic.innerText()).toBe('Speak');
    expect((await speechLog(page)).aborted).toBe(1);
    // The text box is there too, in voice mode.
    await expect(parts.input.isVisible()).resolves.toBe(true);
    await parts.end.click();
    await parts.ended.filter({ hasText: 'The call has ended. Thank you!' }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  });

  it('falls back to the text box in a browser without speech recognition or synthesis', async () => {
    const { page, errors } = await harness.open('/site/call', { init: { script: removeSpeech } });
    const parts = widget(page);
    await parts.launcher.click();
    await parts.start.click();
    await parts.notice.filter({ hasText: 'Voice is not available in this browser: type your message instead.' }).waitFor();
    expect(await focusedInWidget(page)).toBe('textarea');
    await expect(parts.mic.isVisible()).resolves.toBe(false);
    await parts.input.fill(QUESTION);
    await parts.input.press('Enter');
    await parts.announcer.filter({ hasText: KNOWLEDGE.delivery }).waitFor({ state: 'attached' });
    expect(await page.locator('voice-agent-widget .messages .message .text').allTextContents()).toEqual([
      GREETING,
      QUESTION,
      KNOWLEDGE.delivery,
    ]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
