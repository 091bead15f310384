/**
 * The demo's upstream: the test kit's mock OpenAI and Gemini upstreams, real HTTP servers that
 * speak each wire format exactly (streaming too), saying plainly that they are a stand-in. The
 * Gemini one speaks its text with eSpeak NG instead of the tests' tone.
 */
import { MOCK_GEMINI_API_KEY, startMockGeminiUpstream, startMockOpenAIUpstream } from '@gateway/testkit';
import { speak } from './speech.ts';

export const DEMO_COMPLETION_MODEL = 'gpt-3.5-turbo-instruct';
export const DEMO_SPEECH_MODEL = 'gemini-2.5-flash-preview-tts';

export interface DemoUpstream {
  openaiUrl: string;
  geminiUrl: string;
  /** The key the Gemini stand-in expects (the OpenAI one takes any). */
  geminiKey: string;
  close(): Promise<void>;
}

const standIn = (prompt: string) => {
  const said = prompt.length > 80 ? `${prompt.slice(0, 77)}...` : prompt;
  return `This is the demo upstream, a stand-in for a real model, answering through the gateway. You said: "${said}"`;
};

export async function startDemoUpstream(): Promise<DemoUpstream> {
  const openai = await startMockOpenAIUpstream({ text: standIn });
  const gemini = await startMockGeminiUpstream({ speak: (text) => speak(text) });
  return {
    openaiUrl: openai.url,
    geminiUrl: gemini.url,
    geminiKey: MOCK_GEMINI_API_KEY,
    async close() {
      await Promise.all([openai.close(), gemini.close()]);
    },
  };
}
