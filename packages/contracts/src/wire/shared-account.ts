/**
 * What a passed-through request may not reach: the channel's provider account is one for every
 * caller of the gateway, so its files, vector stores, containers, stored prompts and
 * conversations would be every tenant's, and what the provider runs and bills per use (server
 * tools, remote MCP servers, a premium tier) costs more than the quota counts. Each is refused
 * with a 400 naming the field and why, at the door, whichever channel would have served it (the
 * Gemini door's own refusals are in gemini-content.ts).
 */
import { z } from 'zod';

export const ANTHROPIC_ACCOUNT = "the channel's Anthropic account, which every caller of this gateway shares";
export const OPENAI_ACCOUNT = "the channel's OpenAI account, which every caller of this gateway shares";

/** A top-level field that may not be given at all. */
export const refusedField = (reason: string) => z.never({ error: `is not served: ${reason}` }).optional();

type Loose = Record<string, unknown>;
type Path = (string | number)[];

const refuser = (context: z.RefinementCtx) => (path: Path, reason: string) => context.addIssue({ code: 'custom', path, message: `is not served: ${reason}` });

/** Anthropic's server tools (run by Anthropic, billed per use); `bash_*`, `text_editor_*`, `computer_*` and `memory_*` are the client's to run. */
const ANTHROPIC_SERVER_TOOL = /^(web_search|web_fetch|code_execution|tool_search_tool|mcp_toolset)/;

/** A Messages request's Files API sources (in tool results too), container uploads and server tools, refused where they stand. */
export function refuseAnthropicAccountReach(body: { messages?: unknown; tools?: unknown }, context: z.RefinementCtx): void {
  const refuse = refuser(context);
  const blocks = (content: unknown, path: Path) => {
    if (!Array.isArray(content)) return;
    content.forEach((block: Loose, at) => {
      const source = block?.source as Loose | undefined;
      if (source?.type === 'file') refuse([...path, at, 'source', 'type'], `a file belongs to ${ANTHROPIC_ACCOUNT}; send its bytes (base64) or a URL`);
      if (block?.type === 'container_upload') refuse([...path, at, 'type'], `a file and its container belong to ${ANTHROPIC_ACCOUNT}`);
      if (block?.type === 'tool_result') blocks(block.content, [...path, at, 'content']);
    });
  };
  if (Array.isArray(body.messages)) body.messages.forEach((turn: Loose, at) => blocks(turn?.content, ['messages', at, 'content']));
  if (!Array.isArray(body.tools)) return;
  body.tools.forEach((tool: Loose, at) => {
    if (typeof tool?.type !== 'string' || !ANTHROPIC_SERVER_TOOL.test(tool.type)) return;
    refuse(['tools', at, 'type'], `${tool.type} is a server tool Anthropic runs and bills the channel's account for, at a price the quota does not count; offer a tool the client runs`);
  });
}

/**
 * A Responses request's parts given by `file_id`, `file_search` tools (their vector stores) and
 * a `code_interpreter` in a named container, refused where they stand (a union's own message
 * would hide the reason). Hosted tools that reach nothing of the account are taken: `web_search`
 * costs a search fee the quota does not count (docs/api.md), a `code_interpreter` in a new
 * container (`auto`) its container's.
 */
export function refuseOpenAIAccountReach(body: { input?: unknown; tools?: unknown }, context: z.RefinementCtx): void {
  const refuse = refuser(context);
  const parts = (content: unknown, path: Path) => {
    if (!Array.isArray(content)) return;
    content.forEach((part: Loose, at) => {
      if (part?.file_id !== undefined) refuse([...path, at, 'file_id'], `a file belongs to ${OPENAI_ACCOUNT}; send its bytes (file_data, or image_url as a data URL) or a URL`);
    });
  };
  if (Array.isArray(body.input)) {
    body.input.forEach((item: Loose, at) => {
      parts(item?.content, ['input', at, 'content']);
      parts(item?.output, ['input', at, 'output']);
    });
  }
  if (!Array.isArray(body.tools)) return;
  body.tools.forEach((tool: Loose, at) => {
    if (tool?.type === 'file_search') refuse(['tools', at, 'type'], `a vector store belongs to ${OPENAI_ACCOUNT}`);
    if (tool?.type === 'code_interpreter' && typeof tool.container === 'string') refuse(['tools', at, 'container'], `a container belongs to ${OPENAI_ACCOUNT}; give {"type": "auto"}`);
  });
}
