import { Inject, Injectable } from '@nestjs/common';
import type OpenAI from 'openai';
import { TranscriptTurn } from '../../calls/call.entity';
import { codePointLength } from '../../common/code-points';
import { isStorable } from '../../common/storable-text';
import { AppConfig } from '../../config/config';
import { InjectConfig } from '../../config/config.module';
import { CHAT_CLIENT, withDeadline } from './chat-client';

export const SENTIMENTS = ['positive', 'neutral', 'negative'] as const;
export const LEAD_STATUSES = ['new', 'qualified', 'interested', 'not-interested', 'callback'] as const;

/** What the analysis of an ended conversation fills in on its call. */
export interface CallAnalysis {
  sentiment: (typeof SENTIMENTS)[number];
  status: (typeof LEAD_STATUSES)[number];
  summary: string;
}

const MAX_SUMMARY = 2_000;

export const ANALYSIS_PROMPT = `You review a finished conversation between a business's agent and a visitor.
Answer with one JSON object and nothing else, of this form:
{"sentiment": "positive" | "neutral" | "negative", "status": "new" | "qualified" | "interested" | "not-interested" | "callback", "summary": "<one or two sentences>"}
sentiment: the visitor's mood. status: "qualified" when the visitor has a real need the business can serve, "interested" when
they want to go ahead, "not-interested" when they decline, "callback" when they asked to be contacted, otherwise "new".
summary: what the visitor wanted and what was agreed, in the conversation's language.`;

const SPEAKERS = { user: 'Visitor', agent: 'Agent', tool: 'Tool' } as const;

const transcriptText = (transcript: TranscriptTurn[]) => transcript.map((turn) => `${SPEAKERS[turn.speaker]}: ${turn.text}`).join('\n');

/**
 * The model's answer, if it is what was asked for: a JSON object (possibly in a code fence or with words around
 * it) with a known sentiment and status and a non-empty summary. Anything else is undefined: an invalid answer.
 */
export function parseAnalysis(content: unknown): CallAnalysis | undefined {
  if (typeof content !== 'string') return undefined;
  const start = content.indexOf('{');
  const end = content.lastIndexOf('}');
  if (start < 0 || end < start) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(content.slice(start, end + 1));
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const { sentiment, status, summary } = value as Record<string, unknown>;
  const known = <T extends string>(list: readonly T[], item: unknown): item is T =>
    typeof item === 'string' && (list as readonly string[]).includes(item);
  if (!known(SENTIMENTS, sentiment) || !known(LEAD_STATUSES, status) || typeof summary !== 'string') return undefined;
  const text = summary.trim();
  if (!text || codePointLength(text) > MAX_SUMMARY || !isStorable(text)) return undefined;
  return { sentiment, status, summary: text };
}

/** Post-call analysis through the configured Chat Completions provider (one request, not streamed). */
@Injectable()
export class CallAnalyser {
  constructor(
    @Inject(CHAT_CLIENT) private readonly client: OpenAI,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /** The analysis, or undefined for an invalid answer; throws AnswererFailure when the provider fails. */
  async analyse(model: string, transcript: TranscriptTurn[]): Promise<CallAnalysis | undefined> {
    const completion = await withDeadline(this.config.llm.timeoutMs, (signal) =>
      this.client.chat.completions.create(
        {
          model,
          messages: [
            { role: 'system', content: ANALYSIS_PROMPT },
            { role: 'user', content: transcriptText(transcript) },
          ],
          max_tokens: this.config.llm.maxTokens,
        },
        { signal },
      ),
    );
    const choices = (completion as { choices?: unknown } | null)?.choices;
    const content = Array.isArray(choices) ? (choices[0] as { message?: { content?: unknown } } | undefined)?.message?.content : undefined;
    return parseAnalysis(content);
  }
}
