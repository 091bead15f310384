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

/** A function or custom tool, where it stood in the request (for errors), and the namespace it is in. */
export interface OfferedTool {
  tool: Loose & { type: 'function' | 'custom' };
  path: string;
  namespace?: string;
}

const callable = (tool: Loose): tool is OfferedTool['tool'] => tool.type === 'function' || tool.type === 'custom';

export function offeredTools(request: ResponsesRequest): OfferedTool[] {
  return (request.tools ?? []).flatMap((tool, at): OfferedTool[] => {
    const loose = tool as Loose;
    if (callable(loose)) return [{ tool: loose, path: `tools[${at}]` }];
    if (loose.type !== 'namespace') return [];
    const inner = Array.isArray(loose.tools) ? (loose.tools as Loose[]) : [];
    return inner.flatMap((member, i) => (callable(member) ? [{ tool: member, path: `tools[${at}].tools[${i}]`, namespace: String(loose.name) }] : []));
  });
}

/**
 * How a call of each offered tool goes back to the client, by the tool's name: a custom tool's
 * as a `custom_tool_call` item, a namespace's member's with its `namespace` (OpenAI's
 * `function_call.namespace`), which Codex needs to find the tool it offered there.
 */
export interface CallShape {
  custom: boolean;
  namespace?: string;
}

export function callShapes(request: ResponsesRequest): Map<string, CallShape> {
  return new Map(offeredTools(request).map(({ tool, namespace }) => [String(tool.name), { custom: tool.type === 'custom', ...(namespace === undefined ? {} : { namespace }) }]));
}
