import type { AcceptedTurn, ConversationTalk } from '../src/conversations/conversation-talk.service';
import type { ConversationReplies, Delivery } from '../src/conversations/conversation-replies.service';
import { TextToSpeech } from '../src/voice/tts/text-to-speech';
import { testPipeline } from './support/pipeline';

/** A voice that says every sentence as a second of a tone, at the pipeline's rate. */
class ToneVoice extends TextToSpeech {
  readonly name = 'tone';
  readonly sampleRate = 16_000;
  async *synthesize(): AsyncIterable<Int16Array> {
    yield Int16Array.from({ length: 16_000 }, (_, index) => Math.round(4_000 * Math.sin((2 * Math.PI * 220 * index) / 16_000)));
  }
}

/** The conversation's services for one message: its acceptance waits for the test; its reply is one sentence. */
function oneTurnConversation() {
  let accepted!: () => void;
  const acceptance = new Promise<void>((resolve) => (accepted = resolve));
  const deliveries: Delivery[] = [];
  let accepting!: () => void;
  const acceptStarted = new Promise<void>((resolve) => (accepting = resolve));
  const talk = {
    accept: async () => {
      accepting();
      await acceptance;
      return {} as AcceptedTurn;
    },
  } as unknown as ConversationTalk;
  const replies = {
    reply: async (_turn: AcceptedTurn, piece: (text: string) => void, options: { deliver: (text: string) => Promise<Delivery> }) => {
      piece('Hello there.');
      deliveries.push(await options.deliver('Hello there.'));
      return 'Hello there.';
    },
  } as unknown as ConversationReplies;
  return { talk, replies, acceptStarted, accepted, deliveries };
}

describe('VoicePipeline closing', () => {
  it('closes when its call ends while a message is being accepted: the reply that follows is cut off, not played by a stopped clock', async () => {
    const conversation = oneTurnConversation();
    const { pipeline } = await testPipeline({
      services: { talk: conversation.talk, replies: conversation.replies, tts: new ToneVoice() },
    });
    pipeline.text('Hello?');
    await conversation.acceptStarted;
    const closed = pipeline.close();
    conversation.accepted();
    await closed;
    expect(conversation.deliveries).toEqual([{ text: '', interrupted: true, startSeconds: undefined }]);
  });
});
