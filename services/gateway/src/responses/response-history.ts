/**
 * What a Responses request continues, made explicit before it is held and queued: a
 * `previous_response_id`'s conversation (that response's input items and output, the user's own,
 * else 404) is put before the request's input, and each `item_reference` replaced by the stored
 * item it names, so the job carries the whole conversation for a provider that keeps no state,
 * and the hold counts every token of it. Instructions are not carried over, as at OpenAI. The
 * previous response's conversation key comes along, so the chain stays on one channel.
 */
import { badRequest, notFound, type ResponsesInputItem, type ResponsesRequest } from '@gateway/contracts';
import { identifiedItems, orUnavailable, type ResponseStore, type StoredItem } from '@gateway/database';

export interface Continued {
  request: ResponsesRequest;
  /** Every input item the response is given, with ids: what its input_items list shows. */
  inputItems: StoredItem[];
  /** The conversation key the previous response was stored with: this one continues it, on its channel. */
  continues?: string;
}

type Loose = Record<string, unknown>;

/** Most item references one request may make: each is looked for in every stored response of its user. */
export const MAX_ITEM_REFERENCES = 1_000;

/** The distinct ids the input's item references name; past MAX_ITEM_REFERENCES, a 400 naming the first one too many. */
function referencedIds(own: Loose[]): string[] {
  const ids = new Set<string>();
  let count = 0;
  for (const [at, item] of own.entries()) {
    if (item.type !== 'item_reference') continue;
    if (++count > MAX_ITEM_REFERENCES) throw badRequest(`a request may refer to at most ${MAX_ITEM_REFERENCES} stored items (item_reference)`, `input[${at}]`);
    ids.add(String(item.id));
  }
  return [...ids];
}

/**
 * The request with its conversation made explicit; refused when that is larger than `maxBytes`
 * (BODY_LIMIT_BYTES), what the client could have sent whole.
 */
export async function continued(store: ResponseStore | undefined, userId: number, request: ResponsesRequest, maxBytes: number): Promise<Continued> {
  const own: Loose[] = typeof request.input === 'string' ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: request.input }] }] : ((request.input ?? []) as Loose[]);
  const needsStore = request.previous_response_id || own.some((item) => item.type === 'item_reference');
  if (!needsStore) return { request, inputItems: identifiedItems(own) };
  if (!store) throw badRequest('previous_response_id and item_reference need stored responses: this gateway runs without DATABASE_URL', request.previous_response_id ? 'previous_response_id' : 'input');
  const history: Loose[] = [];
  let continues: string | undefined;
  if (request.previous_response_id) {
    const previous = await orUnavailable(store.get(request.previous_response_id, userId));
    if (!previous) throw notFound(`Previous response with id '${request.previous_response_id}' not found.`, 'previous_response_id');
    history.push(...previous.inputItems, ...previous.response.output);
    continues = previous.conversation;
  }
  const found = await orUnavailable(store.items(referencedIds(own), userId));
  const resolved = own.map((item, at) => {
    if (item.type !== 'item_reference') return item;
    const stored = found.get(String(item.id));
    if (!stored) throw notFound(`Item with id '${String(item.id)}' not found.`, `input[${at}]`);
    return stored;
  });
  const inputItems = identifiedItems([...history, ...resolved]);
  const bytes = Buffer.byteLength(JSON.stringify(inputItems));
  if (bytes > maxBytes) {
    throw badRequest(`the input, with its item references and previous_response_id's conversation put in, is ${bytes} bytes, more than the ${maxBytes} a request may be (BODY_LIMIT_BYTES): send a shorter conversation`, request.previous_response_id ? 'previous_response_id' : 'input');
  }
  return { request: { ...request, input: inputItems as ResponsesInputItem[] }, inputItems, ...(continues ? { continues } : {}) };
}
