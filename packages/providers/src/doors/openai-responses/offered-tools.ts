/**
 * The tools of a Responses request a translated provider is offered. A `namespace` (Codex groups
 * its sub-agent tools in one) is a name over function and custom tools: its tools are offered one
 * by one, under their own names. OpenAI's hosted tools (`web_search`, `file_search`, …) run
 * only on OpenAI's side, so they are left out here: the model answers without them, as it would
 * if the client had not offered them (Codex offers `web_search` by default). A request cannot
 * force one (`tool_choice` names functions only).
 */
import type { ResponsesRequest } from '@gateway/contracts';

type Loose = Record<string, unknown>;

/** A function or custom tool, and where it stood in the request (for errors). */
export interface OfferedTool {
  tool: Loose & { type: 'function' | 'custom' };
  path: string;
}

const callable = (tool: Loose): tool is OfferedTool['tool'] => tool.type === 'function' || tool.type === 'custom';

export function offeredTools(request: ResponsesRequest): OfferedTool[] {
  return (request.tools ?? []).flatMap((tool, at): OfferedTool[] => {
    const loose = tool as Loose;
    if (callable(loose)) return [{ tool: loose, path: `tools[${at}]` }];
    if (loose.type !== 'namespace') return [];
    const inner = Array.isArray(loose.tools) ? (loose.tools as Loose[]) : [];
    return inner.flatMap((member, i) => (callable(member) ? [{ tool: member, path: `tools[${at}].tools[${i}]` }] : []));
  });
}

/** The names of the offered custom tools: their calls are custom_tool_call items. */
export const customToolNames = (request: ResponsesRequest) => new Set(offeredTools(request).filter(({ tool }) => tool.type === 'custom').map(({ tool }) => String(tool.name)));
