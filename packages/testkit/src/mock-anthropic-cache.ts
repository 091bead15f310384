/**
 * The mock Anthropic upstream's prompt cache, as Anthropic keeps one per deployment: a request's
 * prefix (tools, system, messages, block by block) up to each `cache_control` mark is written;
 * a later request repeating a written prefix reads it (the longest one, at or before its last
 * mark, wherever the marks now are) and writes the rest up to its last mark. Tokens are counted
 * as the mock counts them (`requestText`), so reads and writes are parts of the prompt.
 */
import { createHash } from 'node:crypto';
import { requestText } from './mock-anthropic-reply.ts';

export interface CacheUse {
  /** Prompt tokens read from the cache (`cache_read_input_tokens`). */
  read: number;
  /** Prompt tokens written to it (`cache_creation_input_tokens`). */
  written: number;
}

type Block = Record<string, unknown>;

/** Every block of the prompt in cache order, each with the role it belongs to. */
function promptBlocks(body: Record<string, unknown>): { role: string; block: Block }[] {
  const asBlocks = (content: unknown): Block[] => (typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? (content as Block[]) : []);
  return [
    ...(Array.isArray(body.tools) ? (body.tools as Block[]) : []).map((block) => ({ role: 'tools', block })),
    ...asBlocks(body.system).map((block) => ({ role: 'system', block })),
    ...(body.messages as { role: string; content: unknown }[]).flatMap((message) => asBlocks(message.content).map((block) => ({ role: message.role, block }))),
  ];
}

export class MockPromptCache {
  private readonly prefixes = new Set<string>();

  /** What the request reads and writes; its marked prefixes are cached from now on. */
  use(body: Record<string, unknown>): CacheUse {
    const blocks = promptBlocks(body);
    const last = blocks.findLastIndex(({ block }) => block.cache_control !== undefined);
    if (last < 0) return { read: 0, written: 0 };
    let hash = '';
    let characters = 0;
    const prefixes = blocks.slice(0, last + 1).map(({ role, block }) => {
      const { cache_control: mark, ...unmarked } = block;
      hash = createHash('sha256').update(hash).update(JSON.stringify([role, unmarked])).digest('hex');
      // Tools are not part of the prompt's text as the mock counts it.
      characters += role === 'tools' ? 0 : requestText({ messages: [{ content: [unmarked] }] }).length;
      // Counted over the whole prefix as `tokens` counts the prompt (rounding per block would overcount it).
      return { hash, counted: Math.ceil(characters / 4), marked: mark !== undefined };
    });
    const hit = prefixes.findLast((prefix) => this.prefixes.has(prefix.hash));
    for (const prefix of prefixes) if (prefix.marked) this.prefixes.add(prefix.hash);
    const read = hit?.counted ?? 0;
    return { read, written: prefixes[last]!.counted - read };
  }

  clear(): void {
    this.prefixes.clear();
  }
}
