/**
 * The model lists, which most clients call first: `GET /v1/models[/{model}]` in OpenAI's format
 * and `GET /v1beta/models[/{model}]` in Gemini's. One route pair, two thin format adapters, each
 * registered by its wire format's plugin (so authenticated as the model operations are); each
 * lists only what the key may use (its `models`, its user's group, enabled channels whose type
 * serves one of the format's operations, aliases included).
 */
import type { FastifyInstance } from 'fastify';
import { GatewayError, modelNotFound, notFound, type ChannelType } from '@gateway/contracts';
import { channelTypesFor } from '@gateway/providers';
import type { ServedModel } from '@gateway/routing';
import { keyHolderOf } from '../auth/request-auth.ts';
import type { ModelCatalog } from './model-catalog.ts';

type Query = Record<string, string | string[] | undefined>;

interface ModelListFormat {
  /** The channel types whose models the format's routes reach. */
  types: readonly ChannelType[];
  list(models: ServedModel[], query: Query): unknown;
  one(model: ServedModel): unknown;
  notFound(model: string): GatewayError;
  /** JSON schemas of the list and of one model: Fastify compiles a serializer from each. */
  schemas: { list: object; one: object };
}

const string = { type: 'string' } as const;
const object = (properties: Record<string, object>, required = Object.keys(properties)) =>
  ({ type: 'object', properties, required, additionalProperties: false }) as const;

/** `owned_by` says what serves the model: the types of its channels (`openai`, `anthropic`, `gemini`). */
const openaiModel = (m: ServedModel) => ({ id: m.id, object: 'model', created: m.created, owned_by: m.types.join(',') });

/** Every channel type whose provider offers an OpenAI operation (the registry): chat through Anthropic, embeddings and speech through Gemini. */
export const openaiModels: ModelListFormat = {
  types: [...new Set((['completions', 'chat', 'embeddings', 'speech'] as const).flatMap(channelTypesFor))].sort(),
  list: (models) => ({ object: 'list', data: models.map(openaiModel) }),
  one: openaiModel,
  notFound: (model) => modelNotFound(`The model \`${model}\` does not exist or you do not have access to it.`),
  schemas: openaiSchemas(),
};

function openaiSchemas() {
  const model = object({ id: string, object: string, created: { type: 'integer' }, owned_by: string });
  return { list: object({ object: string, data: { type: 'array', items: model } }), one: model };
}

/**
 * Gemini's methods the gateway serves, each with the operation behind it: a model is listed with
 * the methods one of its channels' types serves (a chat model on an `openai` or `anthropic`
 * channel is reached through `generateContent` as a `gemini` channel's is).
 */
const GEMINI_METHODS = [
  { methods: ['generateContent', 'streamGenerateContent'], types: channelTypesFor('geminiChat').concat(channelTypesFor('generateContent')) },
  { methods: ['embedContent', 'batchEmbedContents'], types: channelTypesFor('embedContent') },
] as const;

const geminiModel = (m: ServedModel) => ({
  name: `models/${m.id}`,
  displayName: m.id,
  supportedGenerationMethods: GEMINI_METHODS.filter(({ types }) => m.types.some((type) => types.includes(type))).flatMap(({ methods }) => methods),
});

/** Gemini pages its list: `pageSize` (default 50, at most 1000) and an opaque `pageToken`. */
function geminiPage(models: ServedModel[], query: Query) {
  const size = Math.min(1000, Math.max(1, Number(query.pageSize) || 50));
  const start = Math.max(0, Number(query.pageToken) || 0);
  const page = models.slice(start, start + size);
  return { models: page.map(geminiModel), ...(start + size < models.length ? { nextPageToken: String(start + size) } : {}) };
}

export const geminiModels = (version: 'v1' | 'v1beta'): ModelListFormat => ({
  types: [...new Set(GEMINI_METHODS.flatMap(({ types }) => types))].sort(),
  list: geminiPage,
  one: geminiModel,
  notFound: (model) => notFound(`models/${model} is not found for API version ${version}`),
  schemas: geminiSchemas(),
});

function geminiSchemas() {
  const model = object({ name: string, displayName: string, supportedGenerationMethods: { type: 'array', items: string } });
  return { list: object({ models: { type: 'array', items: model }, nextPageToken: string }, ['models']), one: model };
}

/** `GET /models` and `GET /models/{model}` under the plugin's prefix, in `format`. */
export function modelListRoutes(app: FastifyInstance, format: ModelListFormat, catalog: ModelCatalog, constraints?: { wire: string }): void {
  app.get<{ Querystring: Query }>('/models', { constraints, schema: { response: { 200: format.schemas.list } } }, async (request) => {
    return format.list(await catalog.list(keyHolderOf(request), format.types), request.query);
  });
  // A model name may hold a `/` (`org/model`), so the rest of the path is the name.
  app.get<{ Params: { '*': string }; Querystring: Query }>('/models/*', { constraints, schema: { response: { 200: format.schemas.one } } }, async (request) => {
    const name = request.params['*'].replace(/^models\//, '');
    const model = await catalog.find(keyHolderOf(request), format.types, name);
    if (!model) throw format.notFound(name);
    return format.one(model);
  });
}
