/**
 * Azure OpenAI: OpenAI's wire format and mappings (`openai/`) at a resource's deployments, with
 * its key (`api-key`) or a Microsoft Entra ID token (a service principal's, fetched and refreshed:
 * `entra-tokens.ts`), and the API version its credential names (`api.ts`, `credential.ts`). Chat, completions, embeddings and speech; Anthropic's, Gemini's
 * and the Responses doors through chat completions, as on an `openai` channel.
 */
import { openaiStyle } from '../openai/index.ts';
import { azureApi } from './api.ts';

export const azure = openaiStyle(azureApi);
