import * as path from 'node:path';
import { TestAccount } from '../helpers';
import { createShopAgent, fakeMicrophone, KNOWLEDGE, startWidgetHarness, widget, WidgetHarness } from './harness';
import { installSpeechStub, removeSpeech, speechLog } from './page-scripts';

/**
 * Voice mode in Chromium when the service does not transcribe (`ready.input` is `text`, the default): the
 * microphone (Chromium's fake one, faint noise) still streams to the voice socket for the recording, and what the
 * browser recognises goes as text frames. Headless Chromium cannot recognise speech, so a stub is put in the page
 * before its scripts (page.addInitScript): it "hears" a sentence. Without speech recognition, the visitor types.
 */
const NOISE_WAV = path.join(__dirname, '..', 'fixtures', 'voice', 'noise-1s.wav');
const GREETING = 'Namaste! Ask me about delivery or returns.';
const QUESTION = 'How long does delivery take?';

describe("the widget's voice mode with the browser's speech recognition, in Chromium", () => {
  let harness: WidgetHarness;
  let owner: TestAccount;

  beforeAll(async () => {
    harness = await startWidgetHarness({}, fakeMicrophone(NOISE_WAV));
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

  const messages = (page: import('playwright-core').Page) => page.locator('voice-agent-widget .messages .message .text').allTextContents();

  it("hears the visitor in the agent's language through the browser, sends it as text, shows the reply; Mute, End", async () => {
    const { page, errors } = await harness.open('/site/call', { init: { script: installSpeechStub, argument: [QUESTION] } });
    const parts = widget(page);
    await parts.launcher.click();
    expect(await parts.start.innerText()).toBe('Start call');
    await parts.start.click();

    await parts.announcer.filter({ hasText: KNOWLEDGE.delivery }).waitFor({ state: 'attached' });
    expect(await messages(page)).toEqual([GREETING, QUESTION, KNOWLEDGE.delivery]);
    expect(await parts.listening.innerText()).toBe('Listening\u2026');
    const log = await speechLog(page);
    expect(log.listened[0]).toBe('en-IN');
    expect(log.spoken).toEqual([]); // the service speaks now, not the browser

    await parts.mute.click();
    expect(await parts.mute.getAttribute('aria-pressed')).toBe('true');
    expect(await parts.listening.innerText()).toBe('Muted');
    await parts.mute.click();
    expect(await parts.mute.innerText()).toBe('Mute');

    await parts.end.click();
    await parts.ended.filter({ hasText: 'The call has ended. Thank you!' }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  });

  it('offers the text box, sent over the socket, in a browser without speech recognition', async () => {
    const { page, errors } = await harness.open('/site/call', { init: { script: removeSpeech } });
    const parts = widget(page);
    await parts.launcher.click();
    await parts.start.click();
    await parts.notice.filter({ hasText: 'Speech is not recognised in this browser' }).waitFor();
    await expect(parts.mute.isVisible()).resolves.toBe(true);
    await parts.input.fill(QUESTION);
    await parts.input.press('Enter');
    await parts.announcer.filter({ hasText: KNOWLEDGE.delivery }).waitFor({ state: 'attached' });
    expect(await messages(page)).toEqual([GREETING, QUESTION, KNOWLEDGE.delivery]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
