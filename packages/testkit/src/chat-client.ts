/**
 * What tests of a channel type do with the `openai` SDK's chat, once: the tool a streamed tool
 * call is asked with, a chat stream read into what a client makes of it, and a key's used quota.
 */
import type OpenAI from 'openai';

/** A function tool the mocks call with a city (`{"city": …}`). */
export const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

/** A chat stream as its client reads it: the text, the tool call's name and arguments (and in how many pieces), the finish reason, the usage, and each chunk's model. */
export interface ReadChatStream {
  text: string;
  toolName: string;
  toolArguments: string;
  argumentPieces: number;
  finish: string | null;
  usage: OpenAI.CompletionUsage | undefined;
  models: Set<string>;
}

export async function readChatStream(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<ReadChatStream> {
  const read: ReadChatStream = { text: '', toolName: '', toolArguments: '', argumentPieces: 0, finish: null, usage: undefined, models: new Set() };
  for await (const chunk of stream) {
    read.models.add(chunk.model);
    for (const choice of chunk.choices) {
      read.text += choice.delta.content ?? '';
      for (const call of choice.delta.tool_calls ?? []) {
        read.toolName += call.function?.name ?? '';
        if (call.function?.arguments) {
          read.toolArguments += call.function.arguments;
          read.argumentPieces++;
        }
      }
      read.finish = choice.finish_reason ?? read.finish;
    }
    if (chunk.usage) read.usage = chunk.usage;
  }
  return read;
}

/** A key's used quota, as the management API shows it. */
export async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}
