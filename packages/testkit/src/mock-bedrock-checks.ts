/**
 * What Bedrock's Converse refuses in a request body before a model sees it, as a
 * ValidationException (400) with a message in AWS's words: image blocks (`{format, source:
 * {bytes}}`, format png, jpeg, gif or webp, bytes that are base64 of an image of that format),
 * document blocks (`{format, name, source: {bytes}}`, format one of Converse's nine, a name of
 * letters, digits, single spaces, hyphens, parentheses and brackets, bytes of that format),
 * document names distinct across the conversation, at most 5 documents and 20 images, replayed
 * reasoning (`reasoningContent.reasoningText` with text, and a signature of this mock's
 * unchanged), and Claude's thinking (`additionalModelRequestFields.thinking`, or the older
 * `reasoning_config`: a budget of at least 1024 below `maxTokens`, and no temperature but 1).
 * A mock that took what Bedrock refuses would let a gateway's mapping bug through.
 */
import { createHash } from 'node:crypto';

type Loose = Record<string, unknown>;

const IMAGE_FORMATS = ['gif', 'jpeg', 'png', 'webp'];
const DOCUMENT_FORMATS = ['csv', 'doc', 'docx', 'html', 'md', 'pdf', 'txt', 'xls', 'xlsx'];
const DOCUMENT_NAME = /^(?!.*\s{2})[A-Za-z0-9\s\-()[\]]{1,200}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const OLE = [0xd0, 0xcf, 0x11, 0xe0];
const ZIP = [0x50, 0x4b, 0x03, 0x04];

/** The first bytes of a file of each binary format; the text formats take any bytes. */
const startsWith = (bytes: Buffer, prefix: number[] | string, at = 0) =>
  (typeof prefix === 'string' ? Buffer.from(prefix, 'latin1') : Buffer.from(prefix)).equals(bytes.subarray(at, at + prefix.length));
const MAGIC: Record<string, (bytes: Buffer) => boolean> = {
  png: (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  jpeg: (b) => startsWith(b, [0xff, 0xd8, 0xff]),
  gif: (b) => startsWith(b, 'GIF87a') || startsWith(b, 'GIF89a'),
  webp: (b) => startsWith(b, 'RIFF') && startsWith(b, 'WEBP', 8),
  pdf: (b) => startsWith(b, '%PDF-'),
  doc: (b) => startsWith(b, OLE),
  xls: (b) => startsWith(b, OLE),
  docx: (b) => startsWith(b, ZIP),
  xlsx: (b) => startsWith(b, ZIP),
};

/** The signature this mock gives a thought: a replayed thought whose text changed no longer matches it. */
export const signatureOf = (thought: string) => `mock-sig-${createHash('sha256').update(thought).digest('base64url').slice(0, 32)}`;

const enumRefusal = (value: unknown, at: string, allowed: string[]) =>
  `1 validation error detected: Value '${String(value)}' at '${at}' failed to satisfy constraint: Member must satisfy enum value set: [${allowed.join(', ')}]`;

/** The bytes of a media block's source, or why Bedrock refuses them. */
function bytesOf(source: unknown, at: string): Buffer | string {
  const bytes = (source as Loose | undefined)?.bytes;
  if (typeof bytes !== 'string' || bytes === '') return `1 validation error detected: Value at '${at}.source.bytes' failed to satisfy constraint: Member must not be null`;
  if (!BASE64.test(bytes)) return `Invalid base64 in '${at}.source.bytes': the bytes of a media block are sent base64-encoded`;
  return Buffer.from(bytes, 'base64');
}

function imageRefusal(image: Loose, at: string): string | undefined {
  if (!IMAGE_FORMATS.includes(image.format as string)) return enumRefusal(image.format, `${at}.format`, IMAGE_FORMATS);
  const bytes = bytesOf(image.source, at);
  if (typeof bytes === 'string') return bytes;
  if (!MAGIC[image.format as string]!(bytes)) return `The provided image is not a valid ${String(image.format)} image (${at}): check its format and bytes`;
  return undefined;
}

function documentRefusal(document: Loose, at: string): string | undefined {
  if (!DOCUMENT_FORMATS.includes(document.format as string)) return enumRefusal(document.format, `${at}.format`, DOCUMENT_FORMATS);
  if (typeof document.name !== 'string' || !DOCUMENT_NAME.test(document.name)) {
    return `The document name '${String(document.name)}' at '${at}.name' can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets, with no more than one consecutive whitespace character`;
  }
  const bytes = bytesOf(document.source, at);
  if (typeof bytes === 'string') return bytes;
  const magic = MAGIC[document.format as string];
  if (magic && !magic(bytes)) return `The provided document is not a valid ${String(document.format)} file (${at}): check its format and bytes`;
  return undefined;
}

function reasoningRefusal(reasoning: Loose, at: string): string | undefined {
  const text = reasoning.reasoningText as Loose | undefined;
  if (!text) return reasoning.redactedContent !== undefined ? undefined : `${at}: a reasoningContent block needs reasoningText or redactedContent`;
  if (typeof text.text !== 'string') return `1 validation error detected: Value at '${at}.reasoningText.text' failed to satisfy constraint: Member must not be null`;
  const signature = text.signature;
  if (typeof signature === 'string' && signature.startsWith('mock-sig-') && signature !== signatureOf(text.text)) {
    return 'The model returned the following errors: Invalid `signature` in `thinking` block';
  }
  return undefined;
}

function blockRefusal(block: Loose, at: string): string | undefined {
  if (block.image !== undefined) return imageRefusal(block.image as Loose, `${at}.image`);
  if (block.document !== undefined) return documentRefusal(block.document as Loose, `${at}.document`);
  if (block.reasoningContent !== undefined) return reasoningRefusal(block.reasoningContent as Loose, `${at}.reasoningContent`);
  const toolResult = block.toolResult as { content?: Loose[] } | undefined;
  for (const [i, inner] of (toolResult?.content ?? []).entries()) {
    const refusal = blockRefusal(inner, `${at}.toolResult.content.${i + 1}.member`);
    if (refusal) return refusal;
  }
  return undefined;
}

/** The thinking a request asks of Claude, in either of the names Bedrock has documented for it. */
export function thinkingOf(body: Loose): { type?: unknown; budget_tokens?: unknown } | undefined {
  const fields = body.additionalModelRequestFields as Loose | undefined;
  return (fields?.thinking ?? fields?.reasoning_config) as { type?: unknown; budget_tokens?: unknown } | undefined;
}

function thinkingRefusal(body: Loose): string | undefined {
  const thinking = thinkingOf(body);
  if (!thinking || thinking.type !== 'enabled') return undefined;
  const inference = (body.inferenceConfig ?? {}) as { maxTokens?: unknown; temperature?: unknown };
  const budget = thinking.budget_tokens;
  if (!Number.isInteger(budget) || (budget as number) < 1024) return 'The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (typeof inference.maxTokens === 'number' && (budget as number) >= inference.maxTokens) return 'The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`';
  if (inference.temperature !== undefined && inference.temperature !== 1) return 'The model returned the following errors: `temperature` may only be set to 1 when thinking is enabled';
  return undefined;
}

/** What the whole conversation may hold: documents of distinct names, at most 5 of them and 20 images. */
function countRefusal(blocks: Loose[]): string | undefined {
  const names = blocks.flatMap((block) => (block.document ? [String((block.document as Loose).name)] : []));
  if (new Set(names).size < names.length) return "Messages can't contain duplicate document names. Rename the document and retry your request.";
  if (names.length > 5) return "You can't include more than 5 documents in a request.";
  if (blocks.filter((block) => block.image).length > 20) return "You can't include more than 20 images in a request.";
  return undefined;
}

/** Why Converse refuses this body (a ValidationException's message), or undefined. */
export function converseRefusal(body: Loose): string | undefined {
  const messages = Array.isArray(body.messages) ? (body.messages as { content?: unknown }[]) : [];
  const blocks: Loose[] = [];
  for (const [m, message] of messages.entries()) {
    const content = Array.isArray(message?.content) ? (message.content as Loose[]) : [];
    for (const [c, block] of content.entries()) {
      // AWS names members from 1 in its validation messages.
      const refusal = blockRefusal(block ?? {}, `messages.${m + 1}.member.content.${c + 1}.member`);
      if (refusal) return refusal;
      blocks.push(block ?? {}, ...(((block?.toolResult as { content?: Loose[] } | undefined)?.content) ?? []));
    }
  }
  return countRefusal(blocks) ?? thinkingRefusal(body);
}
